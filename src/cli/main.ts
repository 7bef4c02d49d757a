import { Command, CommanderError, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { IngestValidationError, parseIngestFile } from '../../commands/ingest/ingest.parse.js';
import { INGEST_KINDS, type IngestKind } from '../../commands/ingest/ingest.schema.js';
import { ConfigError, loadConfig } from '../config.js';
import { openServices, type Services } from '../container.js';
import { catchUpReadModels, seedIfEmpty, startServer } from '../server.js';

/** Output helpers: `--json` prints one JSON document on stdout; otherwise readable lines. */
function printer(json: boolean) {
  return (human: string, data: unknown) => {
    process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${human}\n`);
  };
}

async function withServices<T>(fn: (s: Services) => Promise<T>): Promise<T> {
  const services = await openServices(loadConfig());
  try {
    return await fn(services);
  } finally {
    await services.close();
  }
}

export function buildCli(): Command {
  const program = new Command('scores')
    .description('Operate the scores service: serve, seed, replay, ingest.')
    .showHelpAfterError()
    .exitOverride();

  program
    .command('serve')
    .description('Serve REST and MCP on PORT; seeds the demo into an empty store first')
    .option('--port <port>', 'override PORT', (v) => Number(v))
    .action(async (opts: { port?: number }) => {
      const services = await openServices(loadConfig());
      const running = await startServer(services, { port: opts.port });
      process.stdout.write(`\nscores service listening on ${running.url}\n`);
      process.stdout.write(`  base URL: ${running.baseUrl}\n  OpenAPI:  ${running.baseUrl}/openapi.json\n`);
      const stop = () => {
        services.log.info('shutting down: finishing in-flight requests');
        void running.shutdown().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });

  program
    .command('seed')
    .description('Write the demo publication history up to the clock (SCORES_NOW or now); idempotent')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      await withServices(async (s) => {
        const head0 = await s.events.headPosition();
        await seedIfEmpty(s, { progress: !opts.json && process.stdout.isTTY });
        await catchUpReadModels(s, { progress: !opts.json && process.stdout.isTTY });
        const head = await s.events.headPosition();
        out(`demo history written through ${s.clock.now().toISOString()} (log head ${head})`, { before: head0, head });
      });
    });

  program
    .command('replay')
    .description('Drop every read model and rebuild it from the event log')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      await withServices(async (s) => {
        const t0 = performance.now();
        let events = 0;
        const counter = s.runner.onEventsApplied((n) => (events += n));
        await s.runner.replay();
        counter();
        await s.runner.stop();
        const seconds = (performance.now() - t0) / 1000;
        out(`rebuilt read models from ${events} events in ${seconds.toFixed(1)} s`, { events, seconds });
      });
    });

  program
    .command('ingest')
    .description('Ingest a CSV or JSONL file of scores or reference data (all rows or none)')
    .argument('<file>', 'path to a .csv or .jsonl file')
    .addOption(new Option('--type <kind>', 'row type when rows carry no "type" and the CSV header does not tell').choices(INGEST_KINDS))
    .addOption(new Option('--format <format>', 'file format (default: from the extension)').choices(['csv', 'jsonl']))
    .option('--json', 'machine-readable output')
    .action(async (file: string, opts: { type?: IngestKind; format?: 'csv' | 'jsonl'; json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      const format = opts.format ?? (['.jsonl', '.ndjson', '.json'].includes(extname(file).toLowerCase()) ? 'jsonl' : 'csv');
      const text = await readFile(file, 'utf8');
      const rows = parseIngestFile(text, format, opts.type ?? null);
      await withServices(async (s) => {
        const result = await ingestRows(s.events, s.clock, rows);
        out(
          `ingested ${result.rows} rows: ${result.written} written, ${result.unchanged} unchanged (${result.events} events in ${result.streams} streams)`,
          result,
        );
      });
    });

  return program;
}

/** Runs the CLI; errors print a clear message and set a non-zero exit code. */
export async function runCli(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      process.exitCode = err.exitCode;
      return;
    }
    if (err instanceof IngestValidationError || err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = 1;
      return;
    }
    process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  }
}
