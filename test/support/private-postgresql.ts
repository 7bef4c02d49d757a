import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { until } from './processes.js';
import { tempDir } from './server.js';

const PROGRAMS = ['initdb', 'pg_ctl', 'postgres', 'psql', 'pg_basebackup', 'pg_verifybackup', 'pg_archivecleanup'];

/**
 * Why no private PostgreSQL cluster can be made on this machine (null: one can): the server's
 * programs are missing (Debian's `postgresql`), or, as root, the user to run them as (the server
 * refuses root). The same places `scripts/engines/postgresql.mjs` looks in.
 */
export function privatePostgresMissing(): string | null {
  const debian = '/usr/lib/postgresql';
  const dirs = [process.env['PG_BINDIR'], ...(existsSync(debian) ? readdirSync(debian).map((v) => join(debian, v, 'bin')) : [])].filter((d): d is string => Boolean(d));
  const onPath = PROGRAMS.every((p) => spawnSync('sh', ['-c', 'command -v "$1"', 'sh', p], { stdio: 'ignore' }).status === 0);
  if (!onPath && !dirs.some((d) => PROGRAMS.every((p) => existsSync(join(d, p))))) {
    return `PostgreSQL's server programs (${PROGRAMS.join(', ')}: Debian's postgresql package)`;
  }
  const user = process.env['ENGINES_PG_USER'] || 'postgres';
  if (process.getuid?.() === 0 && spawnSync('id', ['-u', user], { stdio: 'ignore' }).status !== 0) return `a user "${user}" to run PostgreSQL as (it refuses root)`;
  return null;
}

/**
 * A PostgreSQL cluster of a test's own, made and run by `npm run engines`'s own code
 * (`scripts/engines/engines.mjs` with ENGINES_DIR in a temporary folder and a free port): the
 * settings the engines give their cluster, WAL archiving included. Never the shared cluster.
 */
export interface PrivateCluster {
  /** The event log's database (`scores`) on it. */
  url: string;
  port: number;
  /** Its ENGINES_DIR: `postgresql/data`, `postgresql/archive`, `postgresql/backups`. */
  home: string;
  /** `engines.mjs ARGS` on this cluster: its stdout; throws with its stderr when it fails. */
  engines(args: string[]): Promise<string>;
  /** A base backup (`postgresql-backup`): its folder. */
  backup(): Promise<string>;
  /** The disk lost: kill -9 of the postmaster, then its data directory deleted. */
  lose(): Promise<void>;
  /** `postgresql-restore BACKUP [--target-time T]`: when the restored log's last transaction was committed. */
  restore(backup: string, targetTime?: string): Promise<string>;
  /** Stops it (whatever state it is in) and deletes everything it had. */
  destroy(): Promise<void>;
}

/** A port free on loopback now (the kernel's pick). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts a private cluster; `archiveTimeout` (seconds) is ENGINES_PG_ARCHIVE_TIMEOUT, the engines' 60 by default. */
export async function startPrivateCluster(options: { archiveTimeout?: number } = {}): Promise<PrivateCluster> {
  const home = tempDir('scores-pg-');
  // The server runs as its own user when the tests run as root: it must reach its folder under this one.
  chmodSync(home, 0o755);
  const port = await freePort();
  const env = {
    ...process.env,
    ENGINES_DIR: home,
    ENGINES_POSTGRES_PORT: String(port),
    ...(options.archiveTimeout ? { ENGINES_PG_ARCHIVE_TIMEOUT: String(options.archiveTimeout) } : {}),
  };
  const engines = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['scripts/engines/engines.mjs', ...args], { cwd: projectRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`engines.mjs ${args.join(' ')} exited ${code}:\n${err}`))));
    });
  const data = join(home, 'postgresql', 'data');
  const killPostmaster = async () => {
    const pidFile = join(data, 'postmaster.pid');
    if (!existsSync(pidFile)) return;
    process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGKILL');
    // Its listening socket closes as it dies (a zombie nobody reaps still counts as alive by pid).
    await until(async () => !(await portOpen(port)), 30_000, 50);
  };
  const cluster: PrivateCluster = {
    url: `postgres://scores@127.0.0.1:${port}/scores`,
    port,
    home,
    engines,
    backup: async () => (await engines(['postgresql-backup'])).trim(),
    async lose() {
      await killPostmaster();
      rmSync(data, { recursive: true, force: true });
    },
    restore: async (backup, targetTime) => (await engines(['postgresql-restore', backup, ...(targetTime ? ['--target-time', targetTime] : [])])).trim(),
    async destroy() {
      await engines(['stop', 'postgresql']).catch(() => undefined);
      await killPostmaster().catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
    },
  };
  try {
    await engines(['start', 'postgresql']);
  } catch (err) {
    await cluster.destroy();
    throw err;
  }
  return cluster;
}
