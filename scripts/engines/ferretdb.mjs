// FerretDB v1 (the MongoDB wire protocol over PostgreSQL), built from the Go module proxy's source.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, HOST, PORTS, alive, assertPortFree, daemon, dir, has, log, portOpen, readPid, run, seconds, stopPid, waitHealthy } from './lib.mjs';
import { DATABASES, url } from './postgresql.mjs';

/** v1.24 is the last line that runs on plain PostgreSQL (v2 needs the DocumentDB extension). */
export const VERSION = 'v1.24.2';
const MODULE = 'github.com/FerretDB/FerretDB';

const home = () => dir('ferretdb');
const binary = () => join(home(), 'bin', 'ferretdb');
const installed = () => join(home(), 'bin', `.installed-${VERSION}`);
const files = () => ({ log: join(home(), 'ferretdb.log'), pid: join(home(), 'ferretdb.pid'), state: dir('ferretdb', 'state') });

export const ferretdb = {
  name: 'ferretdb',
  label: `FerretDB ${VERSION}`,
  needs: ['postgresql'],

  missing() {
    if (existsSync(installed())) return [];
    if (!has('go')) return ['go 1.21+ to build FerretDB from the Go module proxy (https://go.dev/dl; the golang of Debian 12 is 1.19, too old)'];
    const v = /go(\d+)\.(\d+)/.exec(spawnSync('go', ['version'], { encoding: 'utf8' }).stdout ?? '');
    if (!v || Number(v[1]) < 1 || (Number(v[1]) === 1 && Number(v[2]) < 21)) {
      return [`go 1.21+ to build FerretDB (found ${v ? v[0] : 'an unknown version'}; 1.21+ fetches the 1.24 toolchain FerretDB asks for)`];
    }
    return [];
  },

  async running() {
    return alive(readPid(files().pid)) && (await portOpen(PORTS.ferretdb));
  },

  async start() {
    await assertPortFree(PORTS.ferretdb, 'FerretDB', 'ENGINES_FERRETDB_PORT');
    install();
    const f = files();
    const started = Date.now();
    const args = [
      `--listen-addr=${HOST}:${PORTS.ferretdb}`,
      '--handler=postgresql',
      `--postgresql-url=${url(DATABASES.ferretdb)}`,
      `--state-dir=${f.state}`,
      '--telemetry=disable',
      '--log-level=error',
      '--debug-addr=-', // no debug HTTP server (its default port, 8088, is often taken)
    ];
    const pid = daemon(binary(), args, { logFile: f.log, pidFile: f.pid, cwd: home() });
    await waitHealthy('FerretDB', healthy, { timeoutMs: 30_000, pid, logFile: f.log });
    log(`ferretdb: healthy on ${HOST}:${PORTS.ferretdb} in ${seconds(started)} (pid ${pid}, log ${f.log})`);
  },

  async stop() {
    return stopPid(files().pid);
  },

  env() {
    return { MONGODB_URI: `mongodb://${HOST}:${PORTS.ferretdb}/` };
  },
};

/**
 * `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2` builds a binary that panics at
 * start: it reads its version from build/version/version.txt, which FerretDB's own build
 * generates and the module does not ship. So: the module's source from the proxy (`go mod
 * download`, checked against the checksum database), that one file written, then `go install`.
 */
function install() {
  if (existsSync(installed())) return;
  const started = Date.now();
  log(`ferretdb: building FerretDB ${VERSION} from the Go module proxy (first use)…`);
  const { Dir } = JSON.parse(run('go', ['mod', 'download', '-json', `${MODULE}@${VERSION}`]));
  if (!Dir) throw new EngineError(`go mod download gave no source directory for ${MODULE}@${VERSION}`);
  const src = join(home(), `src-${VERSION}`);
  rmSync(src, { recursive: true, force: true });
  cpSync(Dir, src, { recursive: true });
  run('chmod', ['-R', 'u+w', src]); // copied read-only from the module cache
  writeFileSync(join(src, 'build', 'version', 'version.txt'), `${VERSION}\n`);
  run('go', ['install', '-trimpath', '-buildvcs=false', './cmd/ferretdb'], { cwd: src, env: { ...process.env, GOBIN: join(home(), 'bin'), GOFLAGS: '-mod=readonly' } });
  rmSync(src, { recursive: true, force: true }); // the binary is all that is needed
  writeFileSync(installed(), `${new Date().toISOString()}\n`);
  log(`ferretdb: built in ${seconds(started)}`);
}

async function healthy() {
  let mongodb;
  try {
    mongodb = await import('mongodb');
  } catch {
    throw new EngineError('the health check needs mongodb from node_modules: run npm ci first');
  }
  const client = new mongodb.MongoClient(ferretdb.env().MONGODB_URI, { serverSelectionTimeoutMS: 1000 });
  try {
    const ping = await client.db('admin').command({ ping: 1 });
    return ping.ok === 1;
  } finally {
    await client.close().catch(() => undefined);
  }
}
