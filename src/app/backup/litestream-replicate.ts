/**
 * `scores replicate --to REPLICA`: Litestream, the pinned binary, run as a child of this process
 * on the data directory's databases, with a configuration written for them, and the key files
 * copied beside the replica whenever they change (docs/backup-litestream.md).
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tryLock } from '../../../infra/files/process-lock.js';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../core/private-files.js';
import type { Config } from '../config.js';
import { StoreBusyError } from '../store-users.js';
import { assertEmbedded, checkedLitestream, keyFilesIn, LITESTREAM_VERSION, litestreamConfig, localStateOf, replicaArgument, REPLICATED, type ReplicaTarget } from './litestream.js';

export interface ReplicateOptions {
  target: ReplicaTarget;
  /** Where the key files are copied; null: they are kept elsewhere (`--without-keys`). */
  keysTo: string | null;
  syncInterval: string;
  /** Once the replica holds every database as it was when replication started. */
  onReady: (report: ReplicationReport) => void;
  /** Litestream's log lines (JSON), and this process's own remarks. */
  onLog: (line: string) => void;
}

export interface ReplicationReport {
  data_dir: string;
  replica: string;
  keys_to: string | null;
  /** Each database, its transaction when the readiness was checked, and the newest the replica holds (not older). */
  databases: { database: string; txid: string; replica_txid: string }[];
  /** `socket`: where `litestream sync -socket` reaches this Litestream. */
  litestream: { version: string; pid: number; config: string; socket: string };
  ready_seconds: number;
}

/** Runs until Litestream exits (a SIGINT or SIGTERM to this process is passed on to it); resolves to its exit code. */
export async function replicate(config: Config, options: ReplicateOptions): Promise<number> {
  assertEmbedded(config, 'scores replicate');
  const bin = checkedLitestream(config);
  const lock = tryLock(join(config.dataDir, 'run', 'replicate.lock'), 'exclusive');
  if (!lock) throw new StoreBusyError(`another scores replicate runs on ${config.dataDir}: one Litestream per store`);
  let stopCopying: () => void = () => undefined;
  try {
    forgetOtherReplica(config.dataDir, replicaArgument(options.target), options.onLog);
    const configFile = join(config.dataDir, 'run', 'litestream.yml');
    const socket = controlSocket(config.dataDir);
    rmSync(socket, { force: true });
    writeFileSync(configFile, litestreamConfig(config.dataDir, options.target, { syncInterval: options.syncInterval, logLevel: config.logLevel, socket }), { mode: PRIVATE_FILE });
    if (options.keysTo) stopCopying = keepKeysCopied(config.dataDir, options.keysTo, options.onLog);
    return await supervise(bin, configFile, socket, config, options);
  } finally {
    stopCopying();
    lock.release();
  }
}

/** Litestream as a child: its output passed on line by line, the signals this process gets passed on to it. */
async function supervise(bin: string, configFile: string, socket: string, config: Config, options: ReplicateOptions): Promise<number> {
  const started = performance.now();
  // Litestream reads LOG_LEVEL too, over its configuration, and knows no `silent`.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'LOG_LEVEL'));
  // A group of its own: a Ctrl-C reaches the terminal's whole group, and Litestream takes a second
  // signal (the one passed on) as "stop without the last sync".
  const child = spawn(bin, ['replicate', '-config', configFile, '-no-expand-env'], { stdio: ['ignore', 'pipe', 'pipe'], env, detached: true });
  for (const stream of [child.stdout, child.stderr]) stream.on('data', lines(options.onLog));
  const exited = new Promise<number>((resolve) => {
    child.on('error', (err) => {
      options.onLog(JSON.stringify({ level: 'ERROR', msg: 'litestream did not start', error: err.message }));
      resolve(1);
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
  let gone = false;
  void exited.then(() => (gone = true));
  const passOn = (signal: NodeJS.Signals) => child.kill(signal);
  process.on('SIGINT', passOn).on('SIGTERM', passOn);
  try {
    const databases = await replicaReady(bin, socket, config.dataDir, () => gone);
    if (databases) {
      const replica = replicaArgument(options.target);
      const litestream = { version: LITESTREAM_VERSION, pid: child.pid!, config: configFile, socket };
      options.onReady({ data_dir: config.dataDir, replica, keys_to: options.keysTo, databases, litestream, ready_seconds: (performance.now() - started) / 1000 });
    }
    return await exited;
  } finally {
    process.off('SIGINT', passOn).off('SIGTERM', passOn);
  }
}

/**
 * Where Litestream listens for `litestream sync` (owner-only): `run/litestream.sock`, or, when that
 * path is longer than a Unix socket's name may be, a file in the temporary directory named for it.
 */
function controlSocket(dataDir: string): string {
  const beside = join(dataDir, 'run', 'litestream.sock');
  return beside.length <= 100 ? beside : join(tmpdir(), `scores-litestream-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}.sock`);
}

/**
 * Litestream's local state names positions in the replica it last shipped to: replicating to
 * another one from it fails (it looks for LTX files it has since removed). A changed replica
 * starts from a fresh snapshot instead; the replica is remembered in `run/litestream.replica`.
 */
function forgetOtherReplica(dataDir: string, replica: string, log: (line: string) => void): void {
  const file = join(dataDir, 'run', 'litestream.replica');
  const before = existsSync(file) ? readFileSync(file, 'utf8').trim() : null;
  if (before !== replica) {
    for (const database of REPLICATED) rmSync(localStateOf(dataDir, database), { recursive: true, force: true });
    if (before !== null) log(JSON.stringify({ level: 'INFO', msg: 'replica changed: Litestream starts from a snapshot', from: before, to: replica }));
  }
  writeFileSync(file, `${replica}\n`, { mode: PRIVATE_FILE });
}

/** Calls `each` with every complete line of a stream's chunks. */
function lines(each: (line: string) => void): (chunk: Buffer) => void {
  let rest = '';
  return (chunk) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop()!;
    for (const line of parts) if (line.trim()) each(line);
  };
}

/**
 * Waits until the replica holds every commit made before replication started: for each database,
 * `litestream sync -wait` through the control socket (a sync of the WAL now, then of the replica),
 * retried until Litestream listens and has opened the database. Null if Litestream exits first.
 */
async function replicaReady(bin: string, socket: string, dataDir: string, gone: () => boolean): Promise<ReplicationReport['databases'] | null> {
  const held: ReplicationReport['databases'] = [];
  for (const database of REPLICATED) {
    for (;;) {
      if (gone()) return null;
      const synced = litestreamJson<{ txid: number; replica_txid: number }>(bin, ['sync', '-wait', '-json', '-timeout', '3600', '-socket', socket, join(dataDir, database)]);
      if (synced && synced.replica_txid >= synced.txid) {
        held.push({ database, txid: hexTxid(synced.txid), replica_txid: hexTxid(synced.replica_txid) });
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  return held;
}

/** A transaction id as Litestream names its files. */
const hexTxid = (n: number) => n.toString(16).padStart(16, '0');

function litestreamJson<T>(bin: string, args: string[]): T | null {
  const run = spawnSync(bin, args, { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) return null;
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    return null;
  }
}

/**
 * Copies the key files into `keysTo` now and whenever one changes (a rotation, the first start
 * generating them): each copy written beside and renamed over, owner-only. Returns the stop.
 */
function keepKeysCopied(dataDir: string, keysTo: string, log: (line: string) => void): () => void {
  mkdirSync(keysTo, { recursive: true, mode: PRIVATE_DIR });
  const seen = new Map<string, string>();
  const copy = () => {
    for (const name of keyFilesIn(dataDir)) {
      const from = join(dataDir, name);
      const stat = statSync(from);
      const mark = `${stat.size}:${stat.mtimeMs}`;
      if (seen.get(name) === mark) continue;
      copyFileSync(from, join(keysTo, `.${name}.tmp`));
      renameSync(join(keysTo, `.${name}.tmp`), join(keysTo, name));
      seen.set(name, mark);
      log(JSON.stringify({ level: 'INFO', msg: 'key file copied', file: name, to: keysTo }));
    }
  };
  copy();
  const timer = setInterval(() => {
    try {
      copy();
    } catch (err) {
      log(JSON.stringify({ level: 'ERROR', msg: 'key file not copied', error: (err as Error).message }));
    }
  }, 1000);
  return () => clearInterval(timer);
}

