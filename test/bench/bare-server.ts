/**
 * Benchmark baseline only: the least a server can do to answer GET /v1/scores/{ticker} with the
 * same JSON: express + one prepared better-sqlite3 statement on the same store file, no key, no
 * metering, no ledger. `npm run bench` compares the real, metered endpoint with it.
 *
 * `BENCH_BARE_SERVER=prototyped` serves it from `createExpressServer` (the service's own way of
 * building the HTTP server) instead of `app.listen()`: the bench reports the metered endpoint
 * against both, so that what the server construction gains is not counted as metering's cost.
 */
import Database from 'better-sqlite3';
import express from 'express';
import { join } from 'node:path';
import { createExpressServer } from '../../src/app/http/express-server.js';

const dir = process.env['SCORES_DATA_DIR'] ?? './data';
const base = process.env['PUBLIC_BASE_URL'] ?? 'http://localhost';
const source = process.env['BENCH_SOURCE'] ?? '';
const db = new Database(join(dir, 'scores.sqlite'), { readonly: true });
const byTicker = db.prepare<[string], { doc: string }>('SELECT doc FROM rm_latest_scores WHERE id = ?');

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.get('/v1/scores/:ticker', (req, res) => {
  const ticker = req.params.ticker.toUpperCase();
  const row = byTicker.get(ticker);
  if (!row) {
    res.status(404).json({ code: 'not_found' });
    return;
  }
  const r = JSON.parse(row.doc) as Record<string, unknown>;
  res.json({
    ticker,
    date: r['date'],
    main_street: r['main_street'],
    wall_street: r['wall_street'],
    service_score: r['service_score'],
    divergence_gap: r['divergence_gap'],
    estimated: r['estimated'],
    as_of: r['date'],
    source,
    citation_url: `${base}/stocks/${ticker}?as_of=${String(r['date'])}`,
  });
});
const server = (process.env['BENCH_BARE_SERVER'] === 'prototyped' ? createExpressServer(app) : app).listen(Number(process.env['PORT'] ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening on ${typeof address === 'object' && address ? address.port : ''}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
