// PostgreSQL from the distribution's packages, as a throwaway cluster under .engines/ that archives
// its WAL (docs/backup-postgresql.md): postgresql-backup.mjs takes base backups and restores them.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, HOST, PORTS, assertPortFree, dir, has, log, portOpen, run, seconds, sleep, waitHealthy } from './lib.mjs';

/** The cluster's superuser (trust authentication on loopback: a throwaway test cluster). */
export const USER = 'scores';
/** The event log's database, and FerretDB's. */
export const DATABASES = { events: 'scores', ferretdb: 'ferretdb' };

const home = () => dir('postgresql');
export const dataDir = () => join(home(), 'data');
const logFile = () => join(home(), 'postgresql.log');
/** Where archive_command copies each finished WAL segment: the server's user's alone, as its data directory is. */
export const archiveDir = () => privateDir(join(home(), 'archive'));

/** Where `postgresql-backup` puts a base backup unless told otherwise; the archive is kept from the oldest of them on. */
export const backupsDir = () => privateDir(join(home(), 'backups'));

/** A folder of the server's user, mode 0700 (WAL and backups hold every row of every database). */
export function privateDir(path) {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chmodSync(path, 0o700);
  return ownedByServer(path);
}

/**
 * How long a segment holding a write may wait before it is archived although not full: the RPO of
 * a quiet log (a busy one fills its 16 MB segments sooner). A minute, as PostgreSQL's documentation
 * advises: a forced switch archives a whole segment, so on a log that writes a little all the time
 * a shorter timeout fills the archive faster (60 s: at most 16 MB a minute, about 1 GB an hour).
 */
export function archiveTimeout() {
  const value = process.env.ENGINES_PG_ARCHIVE_TIMEOUT;
  if (value === undefined || value === '') return 60;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 3600) throw new EngineError(`ENGINES_PG_ARCHIVE_TIMEOUT=${value} is not a number of seconds from 1 to 3600`);
  return n;
}

export const postgresql = {
  name: 'postgresql',
  get label() {
    return `PostgreSQL ${binDir()?.version ?? '(not installed)'}`;
  },

  missing() {
    const bin = binDir();
    if (!bin) return ['the PostgreSQL server binaries: initdb, pg_ctl, postgres, psql (Debian: apt-get install postgresql)'];
    if (process.getuid?.() === 0 && !userExists(serverUser())) {
      return [`a user to run PostgreSQL as (it refuses root): create "${serverUser()}" (useradd --system ${serverUser()}) or name another in ENGINES_PG_USER`];
    }
    return [];
  },

  async running() {
    if (!existsSync(join(dataDir(), 'PG_VERSION'))) return false;
    const [command, args] = asServerUserCommand(pg('pg_ctl'), ['status', '-D', dataDir()]);
    return spawnSync(command, args, { stdio: 'ignore', cwd: '/' }).status === 0 && (await portOpen(PORTS.postgresql));
  },

  async start() {
    await assertPortFree(PORTS.postgresql, 'PostgreSQL', 'ENGINES_POSTGRES_PORT');
    if (!existsSync(join(dataDir(), 'PG_VERSION'))) {
      const started = Date.now();
      asServerUser('initdb', ['-D', dataDir(), '-U', USER, '--auth=trust', '--encoding=UTF8', '--locale=C']);
      log(`postgresql: initdb in ${seconds(started)}`);
    }
    writeArchiving();
    const started = Date.now();
    const options = [`-c listen_addresses=${HOST}`, `-c port=${PORTS.postgresql}`, "-c unix_socket_directories=''", '-c max_connections=200'];
    asServerUser('pg_ctl', ['start', '-D', dataDir(), '-l', logFile(), '-w', '-t', '60', '-o', options.join(' ')]);
    await waitHealthy('PostgreSQL', () => portOpen(PORTS.postgresql), { timeoutMs: 30_000, logFile: logFile() });
    await waitOutOfRecovery();
    for (const name of Object.values(DATABASES)) createDatabase(name);
    pruneArchive();
    log(`postgresql: healthy on ${HOST}:${PORTS.postgresql} in ${seconds(started)}, archiving WAL into ${archiveDir()} (log ${logFile()})`);
  },

  /**
   * A cluster already running when `npm run engines` starts: one started before WAL archiving was
   * set up here is restarted once (archive_mode is read at start only); a changed timeout or
   * archive folder needs only a reload.
   */
  async reuse() {
    const changed = writeArchiving();
    if (psql('postgres', 'SHOW archive_mode').trim() !== 'on') {
      log('postgresql: restarting it once to turn WAL archiving on (archive_mode is read at start only)');
      await this.stop();
      await this.start();
      return;
    }
    if (changed) {
      psql('postgres', 'SELECT pg_reload_conf()');
      log('postgresql: archiving settings changed, reloaded');
    }
    pruneArchive();
    log('postgresql: already running, reused');
  },

  async stop() {
    if (!(await this.running())) return false;
    asServerUser('pg_ctl', ['stop', '-D', dataDir(), '-m', 'fast', '-w']);
    return true;
  },

  env() {
    return { POSTGRES_URL: url(DATABASES.events) };
  },
};

export function url(database) {
  return `postgres://${USER}@${HOST}:${PORTS.postgresql}/${database}`;
}

/** Debian keeps each major version in /usr/lib/postgresql/N/bin (not on the PATH); the newest wins. */
function binDir() {
  const needed = ['initdb', 'pg_ctl', 'postgres', 'psql'];
  const candidates = [];
  if (process.env.PG_BINDIR) candidates.push({ path: process.env.PG_BINDIR, version: '' });
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    for (const v of readdirSync(debian).sort((a, b) => Number(b) - Number(a))) candidates.push({ path: join(debian, v, 'bin'), version: v });
  }
  for (const c of candidates) if (needed.every((b) => existsSync(join(c.path, b)))) return c;
  if (needed.every(has)) return { path: '', version: '' };
  return null;
}

/** The path of one of PostgreSQL's programs (pg_basebackup, pg_verifybackup…) of the version the cluster runs. */
export function pg(binary) {
  const bin = binDir();
  if (!bin) throw new EngineError('PostgreSQL binaries not found (Debian: apt-get install postgresql)');
  return bin.path ? join(bin.path, binary) : binary;
}

function serverUser() {
  return process.env.ENGINES_PG_USER || 'postgres';
}

function userExists(name) {
  return spawnSync('id', ['-u', name], { stdio: 'ignore' }).status === 0;
}

/** As root, gives `path` (and with `recursive` all under it) to the server's user, since the server refuses root; returns `path`. */
export function ownedByServer(path, { recursive = false } = {}) {
  if (process.getuid?.() !== 0) return path;
  const user = serverUser();
  if (recursive) run('chown', ['-R', `${user}:`, path]);
  else chownSync(path, Number(run('id', ['-u', user]).trim()), Number(run('id', ['-g', user]).trim()));
  return path;
}

/** The server (and pg_ctl) refuse to run as root: as root, its files belong to another user and it runs as them. */
function asServerUser(binary, args) {
  ownedByServer(home());
  return runAsServer(pg(binary), args);
}

/** Runs `command` as the server's user (as root) or as oneself: for the files of the cluster and its backups. */
export function runAsServer(command, args) {
  const [c, a] = asServerUserCommand(command, args);
  return run(c, a, { cwd: '/' });
}

function asServerUserCommand(command, args) {
  if (process.getuid?.() !== 0) return [command, args];
  return ['runuser', ['-u', serverUser(), '--', command, ...args]];
}

export function psql(database, sql) {
  return run(pg('psql'), ['-h', HOST, '-p', String(PORTS.postgresql), '-U', USER, '-d', database, '-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-c', sql]);
}

function createDatabase(name) {
  if (psql('postgres', `SELECT 1 FROM pg_database WHERE datname = '${name}'`).trim() === '1') return;
  psql('postgres', `CREATE DATABASE ${name} ENCODING 'UTF8'`);
  log(`postgresql: created database ${name}`);
}

/** A path for a shell command in postgresql.conf: double-quoted, and refused if it holds what would need escaping there. */
export function shellPath(path) {
  if (/["'$`\\%\n]/.test(path)) throw new EngineError(`${path}: a path for archive_command or restore_command may not hold " ' $ \` \\ % or a newline`);
  return `"${path}"`;
}

/**
 * archive_command: copies a finished segment into the archive, never over another file. An
 * identical copy already there (an archiving cut short after its copy, retried) counts as done; a
 * different one makes the command fail, so PostgreSQL keeps the segment, logs it and retries. The
 * copy is synced and then renamed into place: the archive never holds part of a segment under a
 * segment's name, and what it holds survives a crash of the machine.
 */
function archiveCommand(archive) {
  const a = shellPath(archive);
  return `f=${a}/%f; if [ -f "$f" ]; then cmp -s %p "$f"; else cp %p "$f.part" && sync "$f.part" && mv "$f.part" "$f" && sync ${a}; fi`;
}

/** restore_command: a segment from the archive; a missing one fails quietly, which ends the recovery there. */
export function restoreCommand(archive) {
  const a = shellPath(archive);
  return `[ -f ${a}/%f ] && cp ${a}/%f %p`;
}

/**
 * The archiving settings, in `archiving.conf` beside postgresql.conf (which includes it; so does a
 * base backup, and a cluster restored from it goes on archiving). Returns whether they changed.
 */
function writeArchiving() {
  includeEnginesConf();
  const settings = [
    '# Written by scripts/engines/postgresql.mjs at each start: WAL archiving (docs/backup-postgresql.md).',
    "wal_level = 'replica'",
    "archive_mode = 'on'",
    `archive_timeout = ${archiveTimeout()}`,
    `archive_command = '${archiveCommand(archiveDir())}'`,
    '',
  ].join('\n');
  return writeServerFile(join(dataDir(), 'archiving.conf'), settings);
}

/** Files the engines write beside postgresql.conf: the archiving settings, and a restore's while it runs. */
export const ENGINES_CONF = ['archiving.conf', 'restore.conf'];

function includeEnginesConf() {
  const conf = join(dataDir(), 'postgresql.conf');
  const text = readFileSync(conf, 'utf8');
  const missing = ENGINES_CONF.map((f) => `include_if_exists = '${f}'`).filter((line) => !text.includes(line));
  if (missing.length > 0) writeFileSync(conf, `${text.replace(/\n?$/, '\n')}${missing.join('\n')}\n`);
}

/** Writes a file of the data directory, owned by the server's user; returns whether its content changed. */
export function writeServerFile(path, text) {
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return false;
  writeFileSync(path, text, { mode: 0o600 });
  ownedByServer(path);
  return true;
}

/**
 * A cluster restored from a base backup replays the archive before it takes writes: waits for the
 * end of that (at once for any other start), saying how far the replay got every 10 s.
 */
async function waitOutOfRecovery() {
  let said = Date.now();
  let failures = 0;
  for (;; await sleep(250)) {
    let state;
    try {
      state = psql('postgres', "SELECT pg_is_in_recovery(), coalesce(pg_last_xact_replay_timestamp()::text, 'none yet')").trim().split('|');
      failures = 0;
    } catch (err) {
      if (!(await portOpen(PORTS.postgresql))) throw new EngineError(`PostgreSQL stopped during its recovery${logTail()}`);
      if (++failures > 40) throw err;
      continue;
    }
    if (state[0] === 'f') return;
    if (Date.now() - said > 10_000) {
      log(`postgresql: replaying the WAL archive, at the transaction committed ${state[1]}`);
      said = Date.now();
    }
  }
}

export function logTail(lines = 20) {
  if (!existsSync(logFile())) return '';
  return `; the end of ${logFile()}:\n${readFileSync(logFile(), 'utf8').trim().split('\n').slice(-lines).join('\n')}`;
}

/** What pg_basebackup's backup_label says: when the backup started and the first WAL segment it needs. */
export function backupLabel(backup) {
  const path = join(backup, 'backup_label');
  if (!existsSync(path)) throw new EngineError(`${backup} is not a base backup: it has no backup_label (take one with postgresql-backup)`);
  const text = readFileSync(path, 'utf8');
  const walFile = /^START WAL LOCATION: .*\(file ([0-9A-F]{24})\)$/m.exec(text)?.[1];
  const time = /^START TIME: (.+)$/m.exec(text)?.[1];
  if (!walFile || !time) throw new EngineError(`${path} names no START WAL LOCATION or START TIME`);
  return { walFile, time };
}

const SEGMENT = /^[0-9A-F]{24}$/;

/**
 * Archived WAL older than the oldest base backup under backupsDir() restores nothing: removed at
 * each start and after each backup (the suites write gigabytes of WAL an hour). Without a backup,
 * every segment but the newest goes. A backup taken into another folder is not counted here: keep
 * the WAL it needs (from its backup_label's first segment on) beside it.
 */
export function pruneArchive() {
  const archive = archiveDir();
  const backups = readdirSync(backupsDir()).filter((name) => existsSync(join(backupsDir(), name, 'backup_label'))).sort();
  const segments = readdirSync(archive).filter((name) => SEGMENT.test(name)).sort((a, b) => a.slice(8).localeCompare(b.slice(8)));
  const keepFrom = backups.length > 0 ? backupLabel(join(backupsDir(), backups[0])).walFile : segments.at(-1);
  if (keepFrom === undefined) return;
  const older = segments.filter((name) => name.slice(8) < keepFrom.slice(8)).length;
  if (older === 0) return;
  run(pg('pg_archivecleanup'), [archive, keepFrom]);
  log(`postgresql: removed ${older} archived WAL segment(s) older than ${backups.length > 0 ? `the oldest base backup (${backups[0]})` : 'any base backup (none taken)'}`);
}
