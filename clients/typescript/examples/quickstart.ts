// Quickstart: the key and the server come from SCORES_API_KEY and SCORES_BASE_URL (default
// http://localhost:8080, what `npm start` serves). The same file runs as CommonJS and as ESM;
// test/clients/packages.test.ts compiles it with tsc --strict against the packed SDK and runs it.
import { API_VERSION, NotFoundError, ScoresClient, ScoresError } from '@scores/client';

async function main(): Promise<void> {
  const scores = new ScoresClient();
  const latest = await scores.getScore('AAPL');
  // A Date or a YYYY-MM-DD string: a date parameter takes its UTC calendar date.
  const start = new Date(Date.UTC(2019, 1, 1));
  const history = await scores.getScoreHistory('AAPL', { start });
  const themes = await scores.listThemes();
  let missing = '';
  try {
    await scores.getScore('ZZZZZ');
  } catch (e) {
    // Every error of the SDK is a ScoresError; a problem+json answer is the class of its code.
    if (!(e instanceof ScoresError)) throw e;
    missing = `${e.name} ${e instanceof NotFoundError ? e.code : ''}`;
  }
  console.log(
    JSON.stringify({
      api_version: API_VERSION,
      ticker: latest.ticker,
      service_score: latest.service_score,
      history_rows: history.rows.length,
      first_date: history.rows[0]?.date ?? null,
      themes: themes.themes.length,
      missing,
      credits: scores.credits,
    }),
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
