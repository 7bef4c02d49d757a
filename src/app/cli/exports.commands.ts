import type { Command } from 'commander';
import type { SingleBar } from 'cli-progress';
import { runExport, type ExportProgress } from '../../../commands/export-bundles/export-run.handler.js';
import { exportDownloads, exportRuns } from '../../../projections/exports/exports.projection.js';
import type { Services } from '../container.js';
import { progressBar } from '../server.js';
import { CliError } from './cli-errors.js';
import { printer, withServices } from './command-kit.js';

/** `scores exports run|list|downloads`: the bulk export bundles. */
export function addExportCommands(program: Command): void {
  const exports = program.command('exports').description('Bulk export bundles (the Backtest Pack): run one, list them, see downloads');
  exports
    .command('run')
    .description('Build a bundle now from the read models (beside a running server too); a progress bar on a terminal')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      await withServices(
        async (s) => {
          const bar = new ExportProgressBar(!opts.json && process.stdout.isTTY);
          let result;
          try {
            result = await runExport(exportDeps(s), { trigger: 'cli', onProgress: (p) => bar.update(p) });
          } finally {
            bar.stop();
          }
          if (result.status !== 'completed') throw new CliError('another export run holds the lock (a server\'s nightly run or another `scores exports run`); try again when it has finished', 'busy');
          out(
            `bundle ${result.run_id} written in ${result.seconds.toFixed(1)} s\n` +
              result.files.map((f) => `  ${f.name.padEnd(26)} ${String(f.row_count).padStart(9)} rows  ${String(f.bytes).padStart(10)} bytes  sha256 ${f.sha256}`).join('\n') +
              (result.deleted.length ? `\n  older bundles deleted: ${result.deleted.join(', ')}` : ''),
            result,
          );
        },
        { readModels: true },
      );
    });
  exports
    .command('list')
    .description('The bundles kept and the latest one listed by GET /v1/bulk/exports')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      await withServices(
        async (s) => {
          const runs = (await s.reads.find(exportRuns, {}, { sort: [['seq', -1]], limit: 20 })).items;
          printer(Boolean(opts.json))(
            runs.length
              ? runs.map((r) => `${r.run_id}  ${r.status.padEnd(9)} started ${r.started_at} (${r.trigger})${r.files.map((f) => `\n  ${f.name.padEnd(26)} ${String(f.row_count).padStart(9)} rows  sha256 ${f.sha256}`).join('')}`).join('\n')
              : 'no export run yet',
            { runs },
          );
        },
        { readModels: true },
      );
    });
  exports
    .command('downloads')
    .description('Recorded downloads of export files, newest first (free of credits, so not in the credit ledger)')
    .option('--account <id>', 'only this account\'s')
    .option('--limit <n>', 'at most this many (default 50)', (v) => Number(v), 50)
    .option('--json', 'machine-readable output')
    .action(async (opts: { account?: string; limit: number; json?: boolean }) => {
      if (!Number.isSafeInteger(opts.limit) || opts.limit < 1) throw new CliError('--limit must be a positive integer');
      await withServices(
        async (s) => {
          const page = await s.reads.find(exportDownloads, opts.account ? { account_id: opts.account } : {}, { sort: [['at', -1]], limit: opts.limit });
          printer(Boolean(opts.json))(
            page.items.length
              ? page.items
                  .map((d) => `${d.at}  ${d.account_id}  ${d.run_id}/${d.name}  ${d.status} ${d.range ?? 'whole file'}  ${d.bytes_sent} bytes${d.complete ? '' : ' (interrupted)'}  ${d.request_id}`)
                  .join('\n')
              : 'no download recorded',
            { downloads: page.items },
          );
        },
        { readModels: true },
      );
    });
}

const exportDeps = (s: Services) => ({ events: s.events, reads: s.reads, files: s.exportFiles, clock: s.clock, ids: s.ids });

/** One bar per file of the run, on a terminal. */
class ExportProgressBar {
  private bar: SingleBar | null = null;
  private name = '';

  constructor(private readonly enabled: boolean) {}

  update(p: ExportProgress): void {
    if (p.name !== this.name) {
      this.bar?.stop();
      this.name = p.name;
      this.bar = progressBar(p.name.padEnd(26), this.enabled);
      this.bar?.start(Math.max(p.total, 1), 0);
    }
    this.bar?.update(Math.min(p.done, Math.max(p.total, 1)));
  }

  stop(): void {
    this.bar?.stop();
  }
}
