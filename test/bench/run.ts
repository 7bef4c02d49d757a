import { benchDebits } from './debit.bench.js';
import { benchEngines } from './engines.bench.js';
import { benchEventIds } from './event-ids.bench.js';
import { benchExportServerMemory, benchExports } from './exports.bench.js';
import { benchFirstStart } from './first-start.bench.js';
import { benchFlood } from './flood.bench.js';
import { benchFreeBytes } from './free-bytes.bench.js';
import { benchHttp } from './http.bench.js';
import { benchIngest } from './ingest.bench.js';
import { benchKeyLimits } from './key-limits.bench.js';
import { benchLedgerGrowth } from './ledger-growth.bench.js';
import { benchLitestream } from './litestream.bench.js';
import { benchMcp, benchMcpBatchFlood } from './mcp.bench.js';
import { benchOutcomesRebuild } from './outcomes.bench.js';
import { benchPgBackup } from './pg-backup.bench.js';
import { benchPostgresLog } from './postgresql.bench.js';
import { benchRequestLog } from './request-log.bench.js';
import { benchScaleOut } from './scale-out.bench.js';
import { benchSeedAndReplay } from './seed-replay.bench.js';
import { benchSinceQuery } from './since.bench.js';
import { benchWebhooks } from './webhooks.bench.js';

// `npm run bench`: every benchmark, medians over several runs, targets beside each figure.
// BENCH_ONLY=seed,since,outcomes,debit,ids,http,keylimits,mcp,flood,freebytes,webhooks,exports,ledger,ingest,pg,pgbackup,engines,scale,first,litestream,requestlog picks some.
const runs = Number(process.env['BENCH_RUNS'] ?? 3);
const only = new Set((process.env['BENCH_ONLY'] ?? 'seed,since,outcomes,debit,ids,http,keylimits,mcp,flood,freebytes,webhooks,exports,ledger,ingest,pg,pgbackup,engines,scale,first,litestream,requestlog').split(','));
const now = process.env['SCORES_NOW'] ?? new Date().toISOString();
process.stdout.write(`benchmarks (runs=${runs}, clock=${now}, node ${process.version})\n`);
if (only.has('seed')) await benchSeedAndReplay(runs, now);
if (only.has('since')) await benchSinceQuery(runs, now);
if (only.has('outcomes')) await benchOutcomesRebuild(runs, now);
if (only.has('debit')) await benchDebits(runs);
if (only.has('ids')) await benchEventIds(runs);
if (only.has('http')) await benchHttp(runs);
if (only.has('requestlog')) await benchRequestLog(runs, now);
if (only.has('keylimits')) await benchKeyLimits(runs);
if (only.has('mcp')) {
  await benchMcp(runs);
  await benchMcpBatchFlood(runs);
}
if (only.has('flood')) await benchFlood(runs);
if (only.has('freebytes')) await benchFreeBytes(runs, now);
if (only.has('webhooks')) await benchWebhooks(runs);
if (only.has('ledger')) await benchLedgerGrowth(runs);
if (only.has('ingest')) await benchIngest(runs);
if (only.has('pg')) await benchPostgresLog(runs, now);
if (only.has('pgbackup')) await benchPgBackup(runs, now);
if (only.has('engines')) await benchEngines(runs);
if (only.has('scale')) await benchScaleOut(runs);
if (only.has('first')) await benchFirstStart(runs);
if (only.has('litestream')) await benchLitestream(runs, now);
if (only.has('exports')) {
  await benchExports(runs, now);
  await benchExportServerMemory(now);
}
