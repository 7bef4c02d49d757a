import { Option, type Command } from 'commander';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readInstant } from '../../domain/instants.js';
import { loadConfig } from '../config.js';
import { isWithin, replicaTarget, ReplicationError, type ReplicaTarget } from '../backup/litestream.js';
import { replicate, type ReplicationReport } from '../backup/litestream-replicate.js';
import { restoreFromReplica, type RestoreReport } from '../backup/litestream-restore.js';
import { CliError } from './cli-errors.js';
import { printer } from './command-kit.js';

interface ReplicateOpts {
  to?: string;
  keysTo?: string;
  withoutKeys?: boolean;
  syncInterval: string;
  json?: boolean;
}

interface RestoreOpts {
  from: string;
  timestamp?: string;
  keysFrom?: string;
  withoutKeys?: boolean;
  json?: boolean;
}

/** `scores replicate --to R` (continuous, with Litestream) and `scores replicate restore --from R` (docs/backup-litestream.md). */
export function addReplicateCommands(program: Command): void {
  const replicateCommand = program
    .command('replicate')
    .description('Replicate the embedded store continuously to a directory or object storage with Litestream, until stopped (docs/backup-litestream.md)')
    .option('--to <replica>', 'a directory (not inside the data directory), or a URL Litestream writes to: s3://bucket/path, gs://, abs://, sftp://')
    .option('--keys-to <dir>', 'where the key files are copied whenever they change (default: <replica>/keys for a directory)')
    .option('--without-keys', 'copy no key file (LEDGER_SIGNING_KEY and DATA_ENCRYPTION_KEY are kept in a secret manager), as `scores backup --without-keys`')
    .addOption(new Option('--sync-interval <duration>', 'how often new commits are shipped to the replica: 100ms to 60s (e.g. 500ms, 1s)').default('1s').argParser(parseInterval))
    .option('--json', 'machine-readable output')
    .action(async (opts: ReplicateOpts) => {
      if (!opts.to) throw new CliError("required option '--to <replica>' not specified");
      const config = loadConfig();
      const target = replicaTarget(opts.to);
      const keysTo = keysPlace(opts.keysTo, !opts.withoutKeys, target, 'to');
      for (const [what, path] of [['--to', target.kind === 'path' ? target.path : null], ['--keys-to', keysTo]] as const) {
        if (path && isWithin(path, config.dataDir)) throw new CliError(`${what} ${path} is inside the data directory ${config.dataDir}: a replica lost with the disk it protects is none`);
      }
      const out = printer(Boolean(opts.json));
      const code = await replicate(config, {
        target,
        keysTo,
        syncInterval: opts.syncInterval,
        onReady: (report) => out(readyText(report), report),
        onLog: (line) => process.stderr.write(`${line}\n`),
      });
      if (code !== 0) throw new ReplicationError('litestream_failed', `litestream exited with ${code}; its log is above`);
    });
  replicateCommand
    .command('restore')
    .description('Restore the embedded store from a Litestream replica into an empty data directory, as of now or of --timestamp, and verify it (scores audit --all) before it is put in place')
    .requiredOption('--from <replica>', 'the replica: the directory or URL given to `scores replicate --to`')
    .option('--timestamp <instant>', 'restore the log as of this instant (ISO 8601 with a zone, e.g. 2026-11-29T12:00:00Z)', parseTimestamp)
    .option('--keys-from <dir>', 'where the key files were copied (default: <replica>/keys for a directory)')
    .option('--without-keys', 'restore no key file (they are given by environment)')
    .option('--json', 'machine-readable output')
    // `--json` and `--without-keys` are the parent's options too, and commander gives them to it wherever they stand.
    .action(async (_: RestoreOpts, command: Command) => {
      const opts = command.optsWithGlobals<RestoreOpts>();
      const from = replicaTarget(opts.from);
      const keysFrom = keysPlace(opts.keysFrom, !opts.withoutKeys, from, 'from');
      if (opts.keysFrom && !existsSync(opts.keysFrom)) throw new CliError(`--keys-from ${opts.keysFrom}: no such directory`);
      const report = await restoreFromReplica(loadConfig(), { from, timestamp: opts.timestamp ?? null, keysFrom: keysFrom && existsSync(keysFrom) ? keysFrom : null });
      printer(Boolean(opts.json))(restoredText(report), report);
    });
}

/**
 * Where the key files go (or come from): the option, else `<replica>/keys` for a directory. An
 * object-storage replica holds the databases only: the keys need a place named, or `--without-keys`.
 */
function keysPlace(given: string | undefined, keys: boolean, target: ReplicaTarget, direction: 'to' | 'from'): string | null {
  if (!keys) {
    if (given) throw new CliError(`--keys-${direction} and --without-keys do not go together`);
    return null;
  }
  if (given) return resolve(given);
  if (target.kind === 'path') return join(target.path, 'keys');
  throw new CliError(
    `--keys-${direction} <dir> is needed with ${target.url}: Litestream replicates the databases only, and the ledger signing key and the data key are files (or give --without-keys when LEDGER_SIGNING_KEY and DATA_ENCRYPTION_KEY are kept elsewhere)`,
  );
}

function parseInterval(text: string): string {
  const m = /^(\d+)(ms|s)$/.exec(text);
  const ms = m ? Number(m[1]) * (m[2] === 's' ? 1000 : 1) : NaN;
  if (!(ms >= 100 && ms <= 60_000)) throw new CliError(`--sync-interval ${text}: must be a duration from 100ms to 60s, such as 500ms or 1s`);
  return text;
}

function parseTimestamp(text: string): string {
  const reading = readInstant(text);
  if (!reading.ok) throw new CliError(`--timestamp must be ${reading.reason}`);
  return reading.iso;
}

function readyText(r: ReplicationReport): string {
  const held = r.databases.map((d) => `${d.database.slice(r.data_dir.length + 1)} to transaction ${d.replica_txid}`).join(', ');
  const keys = r.keys_to ? `; key files copied to ${r.keys_to} as they change` : '; no key file copied (--without-keys)';
  return `replicating ${r.data_dir} to ${r.replica} with Litestream ${r.litestream.version} (pid ${r.litestream.pid}): the replica holds ${held} (ready in ${r.ready_seconds.toFixed(1)} s)${keys}. SIGINT or SIGTERM stops it after a last sync.`;
}

function restoredText(r: RestoreReport): string {
  const dbs = r.databases.map((d) => `${d.database} (${(d.bytes / 1048576).toFixed(1)} MiB)`).join(' and ');
  const keys = r.keys.length ? `key files ${r.keys.join(', ')}` : 'no key file';
  return (
    `restored ${dbs} from ${r.replica} as of ${r.timestamp ?? 'its newest transaction'} into ${r.data_dir}, with ${keys}. ` +
    `The log verifies (scores audit --all): ${r.accounts} accounts, ${r.ledger_events} ledger events, head position ${r.head_position ?? 'none'} (${r.seconds.toFixed(1)} s).`
  );
}
