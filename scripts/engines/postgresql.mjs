// PostgreSQL from the distribution's packages, as a throwaway cluster under .engines/.
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, HOST, PORTS, assertPortFree, dir, has, log, portOpen, run, seconds, waitHealthy } from './lib.mjs';

/** The cluster's superuser (trust authentication on loopback: a throwaway test cluster). */
export const USER = 'scores';
/** The event log's database, and FerretDB's. */
export const DATABASES = { events: 'scores', ferretdb: 'ferretdb' };

const home = () => dir('postgresql');
const data = () => join(home(), 'data');
const logFile = () => join(home(), 'postgresql.log');

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
    if (!existsSync(join(data(), 'PG_VERSION'))) return false;
    const [command, args] = asServerUserCommand('pg_ctl', ['status', '-D', data()]);
    return spawnSync(command, args, { stdio: 'ignore', cwd: '/' }).status === 0 && (await portOpen(PORTS.postgresql));
  },

  async start() {
    await assertPortFree(PORTS.postgresql, 'PostgreSQL', 'ENGINES_POSTGRES_PORT');
    if (!existsSync(join(data(), 'PG_VERSION'))) {
      const started = Date.now();
      asServerUser('initdb', ['-D', data(), '-U', USER, '--auth=trust', '--encoding=UTF8', '--locale=C']);
      log(`postgresql: initdb in ${seconds(started)}`);
    }
    const started = Date.now();
    const options = [`-c listen_addresses=${HOST}`, `-c port=${PORTS.postgresql}`, "-c unix_socket_directories=''", '-c max_connections=200'];
    asServerUser('pg_ctl', ['start', '-D', data(), '-l', logFile(), '-w', '-t', '60', '-o', options.join(' ')]);
    await waitHealthy('PostgreSQL', () => portOpen(PORTS.postgresql), { timeoutMs: 30_000, logFile: logFile() });
    for (const name of Object.values(DATABASES)) createDatabase(name);
    log(`postgresql: healthy on ${HOST}:${PORTS.postgresql} in ${seconds(started)} (log ${logFile()})`);
  },

  async stop() {
    if (!(await this.running())) return false;
    asServerUser('pg_ctl', ['stop', '-D', data(), '-m', 'fast', '-w']);
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

function pg(binary) {
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

/** The server (and pg_ctl) refuse to run as root: as root, its files belong to another user and it runs as them. */
function asServerUser(binary, args) {
  if (process.getuid?.() === 0) {
    const user = serverUser();
    chownSync(home(), Number(run('id', ['-u', user]).trim()), Number(run('id', ['-g', user]).trim()));
  }
  const [command, commandArgs] = asServerUserCommand(binary, args);
  return run(command, commandArgs, { cwd: '/' });
}

function asServerUserCommand(binary, args) {
  if (process.getuid?.() !== 0) return [pg(binary), args];
  return ['runuser', ['-u', serverUser(), '--', pg(binary), ...args]];
}

function psql(database, sql) {
  return run(pg('psql'), ['-h', HOST, '-p', String(PORTS.postgresql), '-U', USER, '-d', database, '-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-c', sql]);
}

function createDatabase(name) {
  if (psql('postgres', `SELECT 1 FROM pg_database WHERE datname = '${name}'`).trim() === '1') return;
  psql('postgres', `CREATE DATABASE ${name} ENCODING 'UTF8'`);
  log(`postgresql: created database ${name}`);
}
