import type { Command } from 'commander';
import { resolve } from 'node:path';
import { systemClock } from '../../core/clock.js';
import { loadConfig } from '../config.js';
import { backupStore, restoreStore } from '../backup/store-backup.js';
import { printer } from './command-kit.js';

/** `scores backup DEST` and `scores restore SRC`: the embedded store, copied online and restored verified (docs/backup.md). */
export function addBackupCommands(program: Command): void {
  program
    .command('backup')
    .description('Copy the store consistently while the server serves (SQLite online backup), with the key files and a manifest, into a new or empty directory')
    .argument('<dest>', 'the directory to write the backup into')
    .option('--without-keys', 'leave out the ledger signing keys and the data keys (kept elsewhere: a secret manager)')
    .option('--json', 'machine-readable output')
    .action(async (dest: string, opts: { withoutKeys?: boolean; json?: boolean }) => {
      const manifest = await backupStore(loadConfig(), resolve(dest), { keys: !opts.withoutKeys, now: systemClock.now() });
      const bytes = manifest.files.reduce((n, f) => n + f.bytes, 0);
      printer(Boolean(opts.json))(
        `backup written to ${resolve(dest)}: ${manifest.files.map((f) => f.name).join(', ')} (${bytes} bytes), log head ${manifest.head_position ?? 'empty'}, ${manifest.ledgers.length} ledgers verified`,
        manifest,
      );
    });
  program
    .command('restore')
    .description('Restore a backup into a data directory without a store: refused unless every file matches the manifest and the restored log verifies (chains, signed heads, heads)')
    .argument('<src>', 'the backup directory (with its manifest.json)')
    .option('--json', 'machine-readable output')
    .action(async (src: string, opts: { json?: boolean }) => {
      const config = loadConfig();
      const report = await restoreStore(config, resolve(src));
      printer(Boolean(opts.json))(
        `restored into ${config.dataDir}: log head ${report.head_position ?? 'empty'}, ${report.accounts} ledgers verified, ${report.signed_heads_checked} signed heads on invoices checked`,
        report,
      );
    });
}
