import { rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { entitlementsOf } from '../../src/domain/plans.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { latestScores } from '../../projections/latest-scores/latest-scores.projection.js';
import { rowsBetween, scoreHistory } from '../../projections/score-history/score-history.projection.js';
import { getMultiTickerHistory } from '../../queries/get-multi-ticker-history/get-multi-ticker-history.query.js';
import { visibilityFor } from '../../queries/shared/visibility.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, median, report } from './stats.js';

const TARGET_ROWS = 1_000;
const TARGET_MS = 50;
const MIN_RUNS = 20;

/**
 * Incremental sync over the full history: `GET /v1/scores/history?since=…` for a quant key (every
 * ticker, no start: the whole history), on the full demo dataset. Timed: the read path of one call
 * (visibility, query, JSON body), without the HTTP stack and the credit debit. Two cases:
 *
 * - scattered: a correction batch of ~1,000 rows spread over the whole history (one row in up to
 *   1,000 different month buckets), ingested now; `since` = now returns exactly those restated rows.
 *   The worst case for the `written_at` bucket index: every changed row is in its own bucket.
 * - latest: the demo's own publication history; `since` = the instant after which ~1,000 rows were
 *   written (the latest days' publications plus the demo's restatements of earlier days).
 *
 * `runs` timed runs per case (at least 20), after one warm-up.
 */
export async function benchSinceQuery(runs: number, now: string): Promise<void> {
  const n = Math.max(MIN_RUNS, runs);
  const dir = tempDir('scores-bench-since-');
  const services = await openServices(loadConfig(testEnv(dir, now)));
  try {
    const t0 = performance.now();
    await seedIfEmpty(services, { progress: false });
    await catchUpReadModels(services, { progress: false });
    process.stderr.write(`  seeded the full demo dataset in ${fmt((performance.now() - t0) / 1000)} s\n`);

    const latestSince = await sinceForAbout(services, TARGET_ROWS);
    const latest = await timeSince(services, latestSince, n);

    const scatteredSince = await ingestScatteredCorrections(services, TARGET_ROWS);
    const scattered = await timeSince(services, scatteredSince, n);

    process.stderr.write(
      `  scattered: since=${scatteredSince} → ${scattered.rows} rows (${scattered.restated} restated) in ${scattered.buckets} month buckets\n` +
        `  latest:    since=${latestSince} → ${latest.rows} rows (${latest.restated} restated)\n`,
    );
    report(`since, ${scattered.rows} scattered restated rows (median of ${n})`, `${fmt(scattered.medianMs)} ms`, `< ${TARGET_MS} ms`, scattered.medianMs < TARGET_MS);
    report(`since, ${latest.rows} latest rows (median of ${n})`, `${fmt(latest.medianMs)} ms`, `< ${TARGET_MS} ms`, latest.medianMs < TARGET_MS);
  } finally {
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Timing {
  medianMs: number;
  rows: number;
  restated: number;
  buckets: number;
}

async function timeSince(services: Services, since: string, runs: number): Promise<Timing> {
  const entitlements = entitlementsOf('quant', false);
  const once = async () => {
    const v = await visibilityFor(services.reads, entitlements, services.clock.now());
    const result = await getMultiTickerHistory(services.reads, v, { tickers: null, since });
    return { result, body: JSON.stringify(result.rows) };
  };
  const { result } = await once(); // warm-up: statement cache, page cache
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await once();
    ms.push(performance.now() - t);
  }
  return {
    medianMs: median(ms),
    rows: result.rows.length,
    restated: result.rows.filter((r) => r.restated_at !== r.published_at).length,
    buckets: new Set(result.rows.map((r) => `${r.ticker}|${r.date.slice(0, 7)}`)).size,
  };
}

/** The instant such that about `target` rows were written at or after it. */
async function sinceForAbout(services: Services, target: number): Promise<string> {
  const now = services.clock.now();
  const recent = new Date(now.getTime() - 14 * 86_400_000).toISOString();
  const page = await services.reads.find(scoreHistory, { written_at: { $gte: recent } });
  const written = rowsBetween(page.items)
    .map((r) => r.restated_at)
    .filter((t) => t >= recent)
    .sort()
    .reverse();
  // Publications come in blocks of one row per ticker at one instant: take the block boundary
  // whose row count is nearest the target.
  let best = written[0]!;
  let bestDistance = Infinity;
  for (let i = 0; i < written.length; i++) {
    if (i + 1 < written.length && written[i + 1] === written[i]) continue;
    const distance = Math.abs(i + 1 - target);
    if (distance < bestDistance) {
      best = written[i]!;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * Restates `count` rows spread over the whole history (deterministic picks of ticker and day), at
 * the clock's now, through the ingest command; returns that instant.
 */
async function ingestScatteredCorrections(services: Services, count: number): Promise<string> {
  const symbols = (await services.reads.find(latestScores, {})).items.map((s) => s.ticker).sort();
  const days = rowsBetween((await services.reads.find(scoreHistory, { ticker: symbols[0]! })).items).map((r) => r.date);
  const lines = ['ticker,date,main_street,wall_street'];
  const picked = new Set<string>();
  for (let i = 0; picked.size < count; i++) {
    const ticker = symbols[(i * 7_919) % symbols.length]!;
    const date = days[(i * 104_729) % days.length]!;
    if (picked.has(`${ticker}|${date}`)) continue;
    picked.add(`${ticker}|${date}`);
    // x.25 never equals a published value (one decimal): every pick is a real restatement.
    lines.push(`${ticker},${date},${(i % 90) + 5.25},${((i * 37) % 90) + 5.25}`);
  }
  const at = services.clock.now().toISOString();
  const result = await ingestRows(services.events, services.clock, parseIngestFile(lines.join('\n'), 'csv'));
  await services.runner.waitFor(result.position!);
  process.stderr.write(`  ingested a correction batch: ${result.written} rows restated over ${result.streams} days\n`);
  return at;
}

// `npx tsx test/bench/since.bench.ts` (BENCH_RUNS, SCORES_NOW as in run.ts).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const now = process.env['SCORES_NOW'] ?? new Date().toISOString();
  await benchSinceQuery(Number(process.env['BENCH_RUNS'] ?? MIN_RUNS), now);
}
