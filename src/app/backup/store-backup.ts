/**
 * `scores backup DEST` and `scores restore SRC` for the embedded store (docs/backup.md): a
 * consistent online copy of what cannot be rebuilt, with a manifest that says what it holds, and a
 * restore that refuses a copy that is partial, damaged or edited before it reports success.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { auditAll } from '../../../queries/audit-ledger/audit-ledger.query.js';
import { auditInvoiceHeads } from '../../../queries/audit-ledger/audit-against-head.query.js';
import { integrityProblems, onlineBackup } from '../../../infra/sqlite/online-backup.js';
import { ACCOUNT_KEYS_FILE } from '../../../infra/sqlite/account-keys.js';
import { DATA_KEY_FILE } from '../../../infra/files/data-keyring.js';
import { LEDGER_KEY_FILE } from '../../../infra/files/ledger-keyring.js';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../core/private-files.js';
import { SERVICE_VERSION } from '../version.js';
import { loadConfig, type Config } from '../config.js';
import { openServices, type Services } from '../container.js';
import { loadAccount } from '../../../commands/manage-keys/keys.handler.js';

export const BACKUP_FORMAT = 'scores-backup/1';
export const MANIFEST_FILE = 'manifest.json';
const STORE_FILE = 'scores.sqlite';
/** Copied through SQLite's backup API: the log with its read models, and the accounts' keys. */
const DATABASES = [STORE_FILE, ACCOUNT_KEYS_FILE] as const;
/** Copied as they are, unless left out: the ledger signing keys and the data keys. */
const KEY_FILES = [LEDGER_KEY_FILE, DATA_KEY_FILE] as const;

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  created_at: string;
  service_version: string;
  files: { name: string; bytes: number; sha256: string }[];
  /** The log's last position in the copy. */
  head_position: string | null;
  /** Each account's ledger in the copy: its events and the hash its chain ends on. */
  ledgers: { account_id: string; events: number; last_hash: string | null }[];
}

/** A backup or a restore refused: nothing was left half done. `code` is stable. */
export class BackupError extends Error {
  constructor(
    readonly code: 'backup_unsupported' | 'backup_invalid' | 'restore_target_not_empty' | 'restore_audit_failed',
    message: string,
  ) {
    super(message);
  }
}

const sha256File = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

function assertEmbedded(config: Config, what: string): void {
  if (config.postgresUrl || config.esdbUrl) {
    throw new BackupError('backup_unsupported', `${what} is for the embedded store: a log on ${config.postgresUrl ? 'PostgreSQL' : 'EventStoreDB'} is backed up by its own tools (docs/backup.md)`);
  }
}

/** Writes a consistent copy of the data directory's store into `dest` (new or empty), the manifest last. */
export async function backupStore(config: Config, dest: string, options: { keys: boolean; now: Date }): Promise<BackupManifest> {
  assertEmbedded(config, 'scores backup');
  if (existsSync(dest) && readdirSync(dest).length > 0) throw new BackupError('backup_invalid', `${dest} is not empty: a backup goes into a new or empty directory`);
  if (!existsSync(config.sqliteFile)) throw new BackupError('backup_invalid', `no store at ${config.sqliteFile} to back up`);
  mkdirSync(dest, { recursive: true, mode: PRIVATE_DIR });
  for (const name of DATABASES) if (existsSync(join(config.dataDir, name))) await onlineBackup(join(config.dataDir, name), join(dest, name));
  if (options.keys) for (const name of KEY_FILES) if (existsSync(join(config.dataDir, name))) copyFileSync(join(config.dataDir, name), join(dest, name));
  const heads = await verifiedHeads(dest);
  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    created_at: options.now.toISOString(),
    service_version: SERVICE_VERSION,
    files: readdirSync(dest)
      .sort()
      .map((name) => ({ name, bytes: statSync(join(dest, name)).size, sha256: sha256File(join(dest, name)) })),
    ...heads,
  };
  // Last, and by rename: a directory without its manifest is a backup cut short.
  writeFileSync(join(dest, `.${MANIFEST_FILE}`), `${JSON.stringify(manifest, null, 2)}\n`, { mode: PRIVATE_FILE });
  renameSync(join(dest, `.${MANIFEST_FILE}`), join(dest, MANIFEST_FILE));
  return manifest;
}

/**
 * The copy's log head and ledger heads, from the copy opened as a store of its own (its own
 * directory, nothing else of the environment), with its chains verified: a backup of a log that
 * does not verify is refused. What opening it made (a key file it lacked, the outbox) is removed.
 */
async function verifiedHeads(dir: string): Promise<Pick<BackupManifest, 'head_position' | 'ledgers'>> {
  const before = new Set(readdirSync(dir));
  const services = await openServices(loadConfig(isolatedEnv(dir)));
  try {
    // The audit finds the accounts through the read models: the copy's are brought up to its log first.
    await services.runner.start();
    await services.runner.waitForHead();
    const audit = await auditAll({ events: services.events, reads: services.reads });
    if (!audit.ok) throw new BackupError('backup_invalid', `the store does not verify (scores audit --all): ${audit.accounts.filter((a) => !a.ok).map((a) => a.account_id).join(', ')}`);
    return { head_position: await services.events.headPosition(), ledgers: audit.accounts.map((a) => ({ account_id: a.account_id, events: a.events, last_hash: a.last_hash })) };
  } finally {
    await services.close();
    for (const name of readdirSync(dir)) if (!before.has(name)) rmSync(join(dir, name), { recursive: true, force: true });
  }
}

/** A process environment that opens `dir` as an embedded store and nothing else. */
const isolatedEnv = (dir: string): NodeJS.ProcessEnv => ({ SCORES_DATA_DIR: dir, SCORES_DEMO: 'off', LOG_LEVEL: 'silent', SCORES_EXPORTS_SCHEDULE: 'off' });

/**
 * Every forgetting the restored log records is applied to the restored key store again: a key
 * store copied before a forgetting that the log copied after it records must not open that
 * account's data (docs/ledger.md, "Forgetting an account").
 */
async function forgetAgain(services: Services, accountIds: string[]): Promise<number> {
  let forgotten = 0;
  for (const id of accountIds) {
    if ((await loadAccount(services.events, id)).forgotten_at === null) continue;
    await services.personal.forget(id);
    forgotten++;
  }
  return forgotten;
}

export interface RestoreReport {
  files: string[];
  head_position: string | null;
  accounts: number;
  /** Signed ledger heads on invoices checked against the restored log. */
  signed_heads_checked: number;
}

/** The manifest of `src`, each file it names checked whole (size and SHA-256). */
export function checkedManifest(src: string): BackupManifest {
  const path = join(src, MANIFEST_FILE);
  if (!existsSync(path)) throw new BackupError('backup_invalid', `${src} holds no ${MANIFEST_FILE}: not a backup, or one cut short`);
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(readFileSync(path, 'utf8')) as BackupManifest;
  } catch {
    throw new BackupError('backup_invalid', `${path} is not JSON`);
  }
  if (manifest.format !== BACKUP_FORMAT || !Array.isArray(manifest.files) || !manifest.files.some((f) => f.name === STORE_FILE)) {
    throw new BackupError('backup_invalid', `${path} is not a ${BACKUP_FORMAT} manifest with the store in it`);
  }
  for (const f of manifest.files) {
    const file = join(src, f.name);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(f.name) || !existsSync(file)) throw new BackupError('backup_invalid', `${f.name} is missing from the backup`);
    const bytes = statSync(file).size;
    if (bytes !== f.bytes) throw new BackupError('backup_invalid', `${f.name} is ${bytes} bytes where the manifest says ${f.bytes}: truncated or replaced`);
    if (sha256File(file) !== f.sha256) throw new BackupError('backup_invalid', `${f.name} does not match its SHA-256 in the manifest: damaged or edited`);
  }
  return manifest;
}

/**
 * Restores `src` into the configured data directory, which must hold no store: files checked, put
 * in place, then the log opened and verified (every chain, the signed heads on invoices, the heads
 * the manifest names). On any refusal nothing restored is left behind.
 */
export async function restoreStore(config: Config, src: string): Promise<RestoreReport> {
  assertEmbedded(config, 'scores restore');
  for (const name of DATABASES) if (existsSync(join(config.dataDir, name))) throw new BackupError('restore_target_not_empty', `${join(config.dataDir, name)} exists: restore into a data directory without a store`);
  const manifest = checkedManifest(src);
  const names = manifest.files.map((f) => f.name);
  for (const name of names) {
    const there = join(config.dataDir, name);
    if (existsSync(there) && sha256File(there) !== manifest.files.find((f) => f.name === name)!.sha256) {
      throw new BackupError('restore_target_not_empty', `${there} exists and differs from the backup's: restore into a data directory without it`);
    }
  }
  mkdirSync(config.dataDir, { recursive: true, mode: PRIVATE_DIR });
  const before = new Set(readdirSync(config.dataDir));
  try {
    placeFiles(src, config.dataDir, names);
    return await verifyRestored(config, manifest, names);
  } catch (err) {
    // Whatever the restore put there (its files, and what opening them made), and nothing else.
    for (const name of readdirSync(config.dataDir)) if (!before.has(name)) rmSync(join(config.dataDir, name), { recursive: true, force: true });
    throw err;
  }
}

/** Copies the backup's files beside the data directory's, checked by SQLite, then renames in those it lacks. */
function placeFiles(src: string, dataDir: string, names: string[]): void {
  const staging = join(dataDir, `.restore-${process.pid}`);
  mkdirSync(staging, { recursive: true, mode: PRIVATE_DIR });
  try {
    for (const name of names) copyFileSync(join(src, name), join(staging, name));
    for (const name of names.filter((n) => (DATABASES as readonly string[]).includes(n))) {
      const problems = integrityProblems(join(staging, name));
      if (problems.length > 0) throw new BackupError('backup_invalid', `${name} fails SQLite's integrity check: ${problems.join('; ')}`);
    }
    for (const name of names) if (!existsSync(join(dataDir, name))) renameSync(join(staging, name), join(dataDir, name));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** What a restored log is found to hold, whatever it was restored from. */
export interface RestoredLog {
  head_position: string | null;
  /** Each account's ledger as the audit found it. */
  ledgers: { account_id: string; last_hash: string | null; events: number }[];
  signed_heads_checked: number;
  /** Accounts the log says are forgotten, whose keys were destroyed in the restored key store again. */
  forgotten_again: number;
  problems: string[];
}

/**
 * The checks every restore makes before anything is put in place: the read models rebuilt from the
 * restored log (not taken from the copy: the audit finds the accounts through them, and a copy's
 * own could leave an account out), every ledger's chain audited, the signed heads on invoices
 * checked, and every forgetting the log records applied to the restored key store again.
 */
export async function verifyRestoredLog(services: Services): Promise<RestoredLog> {
  await services.runner.replay();
  const deps = { events: services.events, reads: services.reads };
  const audit = await auditAll(deps);
  const problems = audit.accounts.filter((a) => !a.ok).map((a) => `${a.account_id}: ${a.problems.slice(0, 3).join('; ')}`);
  let checked = 0;
  for (const a of audit.accounts) {
    const heads = await auditInvoiceHeads({ ...deps, keys: services.keyring.keys, accountId: a.account_id });
    checked += heads.checked;
    problems.push(...heads.problems.map((p) => `${a.account_id}: ${p}`));
  }
  const forgotten = await forgetAgain(services, audit.accounts.map((a) => a.account_id));
  const ledgers = audit.accounts.map((a) => ({ account_id: a.account_id, last_hash: a.last_hash, events: a.events }));
  return { head_position: await services.events.headPosition(), ledgers, signed_heads_checked: checked, forgotten_again: forgotten, problems };
}

async function verifyRestored(config: Config, manifest: BackupManifest, names: string[]): Promise<RestoreReport> {
  const services = await openServices(config);
  try {
    const log = await verifyRestoredLog(services);
    const problems = [...log.problems];
    for (const a of log.ledgers) {
      const kept = manifest.ledgers.find((l) => l.account_id === a.account_id);
      if (kept && (kept.last_hash !== a.last_hash || kept.events !== a.events)) problems.push(`${a.account_id}: the ledger ends on ${a.last_hash} after ${a.events} events, the manifest says ${kept.last_hash} after ${kept.events}`);
    }
    const audited = new Set(log.ledgers.map((a) => a.account_id));
    for (const l of manifest.ledgers) if (!audited.has(l.account_id)) problems.push(`${l.account_id}: in the manifest, not in the restored log`);
    if (log.head_position !== manifest.head_position) problems.push(`the log ends at position ${log.head_position}, the manifest says ${manifest.head_position}`);
    if (problems.length > 0) throw new BackupError('restore_audit_failed', `the restored log does not verify, nothing was restored:\n  - ${problems.join('\n  - ')}`);
    return { files: names, head_position: log.head_position, accounts: log.ledgers.length, signed_heads_checked: log.signed_heads_checked };
  } finally {
    await services.close();
  }
}
