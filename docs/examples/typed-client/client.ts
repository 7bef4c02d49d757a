/**
 * A typed client of the Scores API (docs/client-examples.md): reads the credit balance from a
 * typed response header, keeps two tickers' score history in sync with `next_since`, and pages
 * through the account's credit ledger.
 *
 *   npm run generate   # types from the served document into schema.d.ts
 *   npm run build && SCORES_API_KEY=sk_live_… npm start
 */
import createClient from 'openapi-fetch';
import type { paths } from './schema.js';

const baseUrl = process.env.SCORES_API_URL ?? 'http://localhost:8080';
const apiKey = process.env.SCORES_API_KEY;
if (!apiKey) throw new Error('set SCORES_API_KEY to your API key');

const api = createClient<paths>({
  baseUrl,
  headers: { 'X-API-Key': apiKey },
  // `tickers` is declared `style: form, explode: false`: one parameter, AAPL,MSFT.
  querySerializer: { array: { style: 'form', explode: false } },
});

/**
 * The headers the document declares on an operation's 200, without openapi-typescript's
 * catch-all `[name: string]: unknown`: a header the document does not declare does not compile.
 */
type Declared<H> = { [K in keyof H as string extends K ? never : K]-?: H[K] };
type Headers200<Op extends { responses: { 200: { headers: unknown } } }> = Declared<Op['responses'][200]['headers']>;
type UsageHeaders = Headers200<paths['/v1/usage']['get']>;
type HistoryHeaders = Headers200<paths['/v1/scores/history']['get']>;
type HistoryRow = paths['/v1/scores/history']['get']['responses'][200]['content']['application/json']['rows'][number];
type LedgerLine = paths['/v1/usage/ledger']['get']['responses'][200]['content']['application/json']['entries'][number];

/** X-Credits-Remaining: a decimal integer (negative in overage), or `unlimited` on an unmetered plan. */
function creditsRemaining(response: Response): number | 'unlimited' {
  const value: UsageHeaders['X-Credits-Remaining'] = response.headers.get('X-Credits-Remaining') ?? '';
  return value === 'unlimited' ? value : Number(value);
}
const requestId = (response: Response): HistoryHeaders['X-Request-Id'] => response.headers.get('X-Request-Id') ?? '';

/** An error answer is problem+json with a stable `code`. */
function fail(problem: { code: string; detail?: string }): never {
  throw new Error(`${problem.code}: ${problem.detail ?? ''}`);
}

// 1. The balance: every authenticated response carries it, so a client can watch it for free.
const usage = await api.GET('/v1/usage');
if (usage.error) fail(usage.error);
console.log(`credits remaining: ${creditsRemaining(usage.response)}`);

// 2. Incremental sync: the first poll returns the whole visible history, each later one only the
// rows written (new or restated) since the previous poll. Keep `since` between runs; a real
// client sleeps and polls again instead of stopping once it is caught up.
const tickers = ['AAPL', 'MSFT'];
const held = new Map<string, HistoryRow>();
let since: string | undefined;
let firstPollId: HistoryHeaders['X-Request-Id'] | undefined;
for (let poll = 1; ; poll++) {
  const { data, error, response } = await api.GET('/v1/scores/history', {
    params: { query: since === undefined ? { tickers } : { tickers, since } },
  });
  if (error) fail(error);
  firstPollId ??= requestId(response);
  for (const row of data.rows) held.set(`${row.ticker} ${row.date}`, row);
  console.log(`poll ${poll}: ${data.count} rows, next_since=${data.next_since}, credits remaining: ${creditsRemaining(response)}`);
  since = data.next_since;
  if (data.count === 0) break;
}
console.log(`holding ${held.size} rows of ${tickers.join(', ')}`);

// 3. The ledger, newest first, page by page: each charged call is a line naming its request id.
const lines: LedgerLine[] = [];
let pages = 0;
let cursor: string | null = null;
do {
  // Annotated: inferred, its type would depend on the loop's own result (tsc's TS7022).
  const query: { cursor?: string } = cursor === null ? {} : { cursor };
  const { data, error } = await api.GET('/v1/usage/ledger', { params: { query } });
  if (error) fail(error);
  lines.push(...data.entries);
  cursor = data.next_cursor;
  pages++;
} while (cursor !== null);
const charge = lines.find((l) => l.request_id === firstPollId);
console.log(`ledger: ${lines.length} lines, pages: ${pages}; poll 1 (${firstPollId}) was charged ${charge?.cost ?? 0} credits`);
