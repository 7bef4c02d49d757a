/**
 * `scores replicate restore --from REPLICA [--timestamp T]`: the databases from a Litestream replica
 * into an empty data directory, as of the newest transaction or of an instant, and the key files
 * kept beside it. Nothing is put in place before the restored log verifies (SQLite's integrity
 * check, then the checks `scores restore` makes: every ledger's hash chain, the signed heads on
 * invoices, forgettings applied again); a restore that does not verify leaves the directory as it
 * found it.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tryLock } from '../../../infra/files/process-lock.js';
import { PRIVATE_DIR } from '../../core/private-files.js';
import type { Config } from '../config.js';
import { openServices } from '../container.js';
import { StoreBusyError } from '../store-users.js';
import { assertEmbedded, checkedLitestream, keyFilesIn, replicaArgument, replicaOf, ReplicationError, REPLICATED, type ReplicaTarget } from './litestream.js';
import { verifyRestoredLog } from './store-backup.js';

export interface RestoreOptions {
  from: ReplicaTarget;
  /** The instant to restore the log as of (ISO 8601, UTC); null: the newest transaction the replica holds. */
  timestamp: string | null;
  /** Where the key files were kept (`scores replicate --keys-to`); null: none to restore. */
  keysFrom: string | null;
}

export interface RestoreReport {
  data_dir: string;
  replica: string;
  timestamp: string | null;
  databases: { database: string; bytes: number }[];
  keys: string[];
  head_position: string | null;
  accounts: number;
  ledger_events: number;
  /** Signed ledger heads on invoices checked against the restored log. */
  signed_heads_checked: number;
  /** Accounts the log says are forgotten, whose keys were destroyed in the restored key store again. */
  forgotten_again: number;
  seconds: number;
}

const STAGING = '.restoring';

/** Restores into `config.dataDir`, which must be empty or absent; on any failure it is left so. */
export async function restoreFromReplica(config: Config, options: RestoreOptions): Promise<RestoreReport> {
  assertEmbedded(config, 'scores replicate restore');
  const dir = config.dataDir;
  const existed = existsSync(dir);
  if (existed && readdirSync(dir).length > 0) {
    throw new ReplicationError('restore_target_not_empty', `${dir} is not empty: a restore goes into an empty data directory (move this one aside first)`);
  }
  const bin = checkedLitestream(config);
  const started = performance.now();
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  // Servers refuse to start while this is held (src/app/store-users.ts).
  const lock = tryLock(join(dir, 'run', 'store.lock'), 'exclusive');
  if (!lock) throw new StoreBusyError(`a server started on ${dir} during the restore`);
  try {
    const staging = join(dir, STAGING);
    mkdirSync(staging, { mode: PRIVATE_DIR });
    const databases = REPLICATED.flatMap((database) => restoreDatabase(bin, options, staging, database));
    const keys = options.keysFrom ? keyFilesIn(options.keysFrom) : [];
    for (const name of keys) copyFileSync(join(options.keysFrom!, name), join(staging, name));
    const verified = await verify(staging, config);
    for (const name of readdirSync(staging)) renameSync(join(staging, name), join(dir, name));
    rmSync(staging, { recursive: true, force: true });
    lock.release();
    rmSync(join(dir, 'run'), { recursive: true, force: true });
    return { data_dir: dir, replica: replicaArgument(options.from), timestamp: options.timestamp, databases, keys, ...verified, seconds: (performance.now() - started) / 1000 };
  } catch (err) {
    lock.release();
    for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
    if (!existed) rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * One database out of the replica, checked by SQLite's quick integrity check. The log is restored
 * as of the timestamp; the accounts' keys always as of the newest transaction, so that a
 * forgotten account's key, destroyed since, is not brought back with an older log.
 */
function restoreDatabase(bin: string, options: RestoreOptions, staging: string, database: string): { database: string; bytes: number }[] {
  const output = join(staging, database);
  const asOf = database === REPLICATED[0] && options.timestamp ? ['-timestamp', options.timestamp] : [];
  const args = ['restore', '-if-replica-exists', '-integrity-check', 'quick', ...asOf, '-o', output, replicaArgument(replicaOf(options.from, database))];
  const run = spawnSync(bin, args, { encoding: 'utf8', timeout: 30 * 60_000 });
  if (run.status !== 0) {
    const said = `${run.stdout ?? ''}${run.stderr ?? ''}`.trim().split('\n').slice(-5).join('\n');
    const code = /no matching backups?|no backups found|timestamp does not exist/i.test(said) ? 'replica_empty' : /integrity/i.test(said) ? 'restore_audit_failed' : 'litestream_failed';
    throw new ReplicationError(code, `litestream restore of ${database} failed (exit ${run.status ?? run.signal}):\n${said}`);
  }
  if (!existsSync(output)) {
    if (database !== REPLICATED[0]) return [];
    throw new ReplicationError('replica_empty', `${replicaArgument(options.from)} holds no replica of ${database}`);
  }
  return [{ database, bytes: statSync(output).size }];
}

/**
 * The restored log opened in the staging directory, with this configuration's keys (its key files
 * restored beside it, or the keys from the environment), and verified as `scores restore` verifies
 * a backup: read models rebuilt from it, every chain and every invoice's signed head, forgettings
 * applied to the restored key store again.
 */
async function verify(staging: string, config: Config): Promise<Pick<RestoreReport, 'head_position' | 'accounts' | 'ledger_events' | 'signed_heads_checked' | 'forgotten_again'>> {
  const services = await openServices({ ...config, dataDir: staging, sqliteFile: join(staging, REPLICATED[0]), demo: false });
  try {
    const log = await verifyRestoredLog(services);
    if (log.problems.length > 0) {
      throw new ReplicationError('restore_audit_failed', `the restored log does not verify; nothing was restored:\n  - ${log.problems.slice(0, 20).join('\n  - ')}`);
    }
    const { head_position, signed_heads_checked, forgotten_again } = log;
    return { head_position, accounts: log.ledgers.length, ledger_events: log.ledgers.reduce((n, a) => n + a.events, 0), signed_heads_checked, forgotten_again };
  } finally {
    await services.close();
  }
}
