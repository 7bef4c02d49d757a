/**
 * Litestream for the embedded store (docs/backup-litestream.md): the pinned binary, where a replica
 * is, and the configuration `scores replicate` writes. Litestream copies each database's WAL, as
 * SQLite commits it, to a replica (a local path or object storage) and restores a database as of
 * any instant the replica covers.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ACCOUNT_KEYS_FILE } from '../../../infra/sqlite/account-keys.js';
import { DATA_KEY_FILE } from '../../../infra/files/data-keyring.js';
import { LEDGER_KEY_FILE } from '../../../infra/files/ledger-keyring.js';
import { projectRoot } from '../../core/paths.js';
import type { Config } from '../config.js';

/** The version `npm run engines` installs (scripts/engines/litestream.mjs) and the only one run. */
export const LITESTREAM_VERSION = 'v0.5.18';

/**
 * The RPO stated for a replica with the default `--sync-interval` of 1 s: a call acknowledged
 * longer ago than this before the disk is lost is in the replica (test/e2e/restore-drill-litestream.test.ts
 * holds the service to it; docs/backup-litestream.md has what was measured).
 */
export const LITESTREAM_RPO_SECONDS = 5;

/** The databases replicated: the log with its read models, and the accounts' keys (kept apart from the log). */
export const REPLICATED = ['scores.sqlite', ACCOUNT_KEYS_FILE] as const;
/** Files, not databases: copied beside the replica (`--keys-to`), never through Litestream. */
export const KEY_FILES = [LEDGER_KEY_FILE, DATA_KEY_FILE] as const;

export type ReplicationErrorCode =
  | 'replication_unsupported'
  | 'litestream_missing'
  | 'litestream_version'
  | 'litestream_failed'
  | 'replica_empty'
  | 'restore_target_not_empty'
  | 'restore_audit_failed';

/** A refusal of `scores replicate`: `code` is stable (docs/backup-litestream.md lists them). */
export class ReplicationError extends Error {
  constructor(
    readonly code: ReplicationErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Replication is of the embedded log; PostgreSQL and EventStoreDB have their own tools. */
export function assertEmbedded(config: Config, what: string): void {
  const engine = config.postgresUrl ? 'PostgreSQL (POSTGRES_URL)' : config.esdbUrl ? 'EventStoreDB (ESDB_URL)' : null;
  if (engine) throw new ReplicationError('replication_unsupported', `${what} replicates the embedded store; this log is on ${engine}, which its own backup tools cover`);
}

/** LITESTREAM_BIN, else where `npm run engines` installs it. */
export function litestreamPath(config: Pick<Config, 'litestreamBin'>): string {
  return config.litestreamBin ?? join(projectRoot(), '.engines', 'litestream', 'bin', 'litestream');
}

/** The pinned binary's path; refuses a missing binary or another version, saying how to install it. */
export function checkedLitestream(config: Pick<Config, 'litestreamBin'>): string {
  const bin = litestreamPath(config);
  const install = '`npm run engines -- install litestream` builds it into .engines/ (Go 1.21+), or set LITESTREAM_BIN';
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new ReplicationError('litestream_missing', `Litestream ${LITESTREAM_VERSION} is not installed at ${bin}: ${install}`);
  }
  const run = spawnSync(bin, ['version'], { encoding: 'utf8', timeout: 30_000 });
  const version = (run.stdout ?? '').trim();
  if (run.status !== 0 || version !== LITESTREAM_VERSION) {
    const found = run.error ? run.error.message : version || `no version (exit ${run.status})`;
    throw new ReplicationError('litestream_version', `${bin} is not Litestream ${LITESTREAM_VERSION} (it answers ${found}): ${install}`);
  }
  return bin;
}

/** Where a replica is: a directory on this machine, or a URL Litestream writes to (s3://, gs://, abs://, sftp://, webdav://, file://). */
export type ReplicaTarget = { kind: 'path'; path: string } | { kind: 'url'; url: string };

/** Reads `--to` / `--from`: a URL with a scheme, else a path (relative to the working directory). */
export function replicaTarget(text: string): ReplicaTarget {
  const url = /^([a-z][a-z0-9+.-]*):\/\/(.+)$/i.exec(text.trim());
  if (url) {
    if (url[1]!.toLowerCase() === 'file') return { kind: 'path', path: fileURLToPath(text.trim()) };
    return { kind: 'url', url: text.trim().replace(/\/+$/, '') };
  }
  return { kind: 'path', path: resolve(text) };
}

/** Whether `inner` is `outer` or lies under it. */
export function isWithin(inner: string, outer: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** Each database's own place in the replica: `<replica>/scores`, `<replica>/account-keys`. */
export function replicaOf(target: ReplicaTarget, database: string): ReplicaTarget {
  const name = basename(database, '.sqlite');
  return target.kind === 'path' ? { kind: 'path', path: join(target.path, name) } : { kind: 'url', url: `${target.url}/${name}` };
}

/** What Litestream restores from: a path or a URL, as its command line takes it. */
export const replicaArgument = (target: ReplicaTarget) => (target.kind === 'path' ? pathToFileURL(target.path).href : target.url);

export interface ReplicationSettings {
  /** How often the new WAL is read into LTX files and how often they are sent to the replica. */
  syncInterval: string;
  /** The service's LOG_LEVEL: Litestream's log follows it (errors always show). */
  logLevel: Config['logLevel'];
  /** The control socket `litestream sync` talks to (owner-only). */
  socket: string;
}

const LITESTREAM_LEVEL: Record<Config['logLevel'], string> = { trace: 'debug', debug: 'debug', info: 'info', warn: 'warn', error: 'error', fatal: 'error', silent: 'error' };

/**
 * The configuration for `litestream replicate`. Checkpoints are Litestream's (a PASSIVE one at
 * 1,000 WAL pages under its write barrier, so that no commit lands unseen between its last copy
 * and the checkpoint); its emergency TRUNCATE is set for this store's 16 KiB pages (its default,
 * 121,359 pages, assumes 4 KiB: 1.9 GB of WAL here). The service's own autocheckpoint (10,000
 * pages, infra/sqlite/database.ts) stays above Litestream's, as a net for when Litestream is not
 * running: Litestream holds a read transaction, so a checkpoint of the service's cannot reset
 * the WAL under it. Strings are written as JSON, which YAML reads as double-quoted scalars.
 */
export function litestreamConfig(dataDir: string, target: ReplicaTarget, settings: ReplicationSettings): string {
  const q = (s: string) => JSON.stringify(s);
  const lines = [
    '# Written by `scores replicate` at each start (docs/backup-litestream.md); edits are overwritten.',
    'logging:',
    `  level: ${LITESTREAM_LEVEL[settings.logLevel]}`,
    '  type: json',
    '  stderr: true',
    'socket:',
    '  enabled: true',
    `  path: ${q(settings.socket)}`, // owner-only: Litestream's default permissions
    'dbs:',
  ];
  for (const database of REPLICATED) {
    const replica = replicaOf(target, database);
    lines.push(
      `  - path: ${q(join(dataDir, database))}`,
      `    monitor-interval: ${settings.syncInterval}`,
      '    min-checkpoint-page-count: 1000',
      '    truncate-page-n: 30000',
      '    replica:',
      ...(replica.kind === 'path' ? ['      type: file', `      path: ${q(replica.path)}`] : [`      url: ${q(replica.url)}`]),
      `      sync-interval: ${settings.syncInterval}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Litestream's own state beside a database (`.<name>-litestream/`: the LTX files not yet shipped
 * and its position), which names positions in one replica only.
 */
export const localStateOf = (dataDir: string, database: string) => join(dataDir, `.${database}-litestream`);

/** The key files present in `dir`. */
export const keyFilesIn = (dir: string) => KEY_FILES.filter((name) => existsSync(join(dir, name)));
