// Litestream (continuous replication of the embedded SQLite store to a replica), built from the Go
// module proxy's source. A tool, not a server: `npm run engines` installs it into
// .engines/litestream/bin, and `scores replicate` runs it (docs/backup-litestream.md).
import { spawnSync } from 'node:child_process';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, dir, has, log, run, seconds } from './lib.mjs';

/** The one place the version is pinned (`scores replicate` refuses any other: src/app/backup/litestream.ts). */
export const VERSION = 'v0.5.18';
const PACKAGE = 'github.com/benbjohnson/litestream/cmd/litestream';

const home = () => dir('litestream');
/** Where `scores replicate` looks for it unless LITESTREAM_BIN says otherwise. */
export const binary = () => join(home(), 'bin', 'litestream');
const installed = () => join(home(), 'bin', `.installed-${VERSION}`);

export const litestream = {
  name: 'litestream',
  label: `Litestream ${VERSION}`,
  /** Installed, never started: `start` installs it, `stop` has nothing to stop, `status` says whether it is there. */
  tool: true,

  missing() {
    if (isInstalled()) return [];
    if (!has('go')) return ['go 1.21+ to build Litestream from the Go module proxy (https://go.dev/dl; the golang of Debian 12 is 1.19, too old)'];
    const v = /go(\d+)\.(\d+)/.exec(spawnSync('go', ['version'], { encoding: 'utf8' }).stdout ?? '');
    if (!v || Number(v[1]) < 1 || (Number(v[1]) === 1 && Number(v[2]) < 21)) {
      return [`go 1.21+ to build Litestream (found ${v ? v[0] : 'an unknown version'}; 1.21+ fetches the 1.26 toolchain Litestream ${VERSION} asks for)`];
    }
    return [];
  },

  async running() {
    return isInstalled();
  },

  async start() {
    install();
  },

  async stop() {
    return false;
  },

  env() {
    return { LITESTREAM_BIN: binary() };
  },
};

/** The marker is written only once the binary built has answered with the pinned version. */
function isInstalled() {
  return existsSync(installed()) && existsSync(binary());
}

/**
 * `go install …/cmd/litestream@v0.5.18` (the source checked against the Go checksum database),
 * into a directory of its own first: an interrupted build leaves no binary where `scores
 * replicate` looks. The binary reports the module's version, which is checked before it is moved.
 */
function install() {
  if (isInstalled()) return;
  const started = Date.now();
  log(`litestream: building Litestream ${VERSION} from the Go module proxy (first use; a few minutes)…`);
  const staging = join(home(), `bin-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  try {
    run('go', ['install', '-trimpath', `${PACKAGE}@${VERSION}`], { env: { ...process.env, GOBIN: staging, GOFLAGS: '-mod=mod' } });
    const built = join(staging, 'litestream');
    const version = run(built, ['version']).trim();
    if (version !== VERSION) throw new EngineError(`the Litestream built reports version ${version}, not ${VERSION}`);
    rmSync(join(home(), 'bin'), { recursive: true, force: true });
    renameSync(staging, join(home(), 'bin'));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  writeFileSync(installed(), `${new Date().toISOString()}\n`);
  log(`litestream: built in ${seconds(started)} (${binary()})`);
}
