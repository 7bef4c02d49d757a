/**
 * A projector process of its own, for a test that kills it (test/integration/projection-kill-postgres.test.ts):
 * projects the named projections from the PostgreSQL log (POSTGRES_URL) into the PostgreSQL read
 * store (schema READ_MODELS_SCHEMA), from their stored checkpoints, `batch` events a commit. It
 * prints `committed <position>` after each commit and keeps following the log until it is killed.
 *
 *   node --import tsx test/support/projector-process.ts <batch> <projection name>…
 */
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { PostgresReadStore } from '../../infra/postgresql/read-store.js';
import { allProjections } from '../../projections/index.js';
import { systemClock } from '../../src/core/clock.js';
import { logEncoding } from '../../src/domain/scores/log-encoding.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';

const [batch, ...names] = process.argv.slice(2);
const url = process.env['POSTGRES_URL'];
const projections = allProjections().filter((p) => names.includes(p.name));
if (!url || !Number(batch) || projections.length !== names.length) {
  process.stderr.write(`usage: POSTGRES_URL=… READ_MODELS_SCHEMA=… projector-process.ts <batch> <projection>… (known: ${allProjections().map((p) => p.name).join(', ')})\n`);
  process.exit(2);
}

const runner = new ProjectorRunner(
  new PostgresEventStore(url, systemClock, { codec: logEncoding }),
  new PostgresReadStore(url, { schema: process.env['READ_MODELS_SCHEMA'] ?? 'read_models' }),
  projections,
  {
    batchSize: Number(batch),
    onProgress: (_events, position) => process.stdout.write(`committed ${position}\n`),
    onError: (err) => {
      process.stderr.write(`projector failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  },
);
await runner.start();
process.stdout.write('caught up\n');
