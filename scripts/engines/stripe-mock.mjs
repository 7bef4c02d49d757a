// stripe-mock (Stripe's own API double: it answers every endpoint of Stripe's OpenAPI with fixtures,
// validating each request, and keeps no state), built from the Go module proxy's source. The
// Stripe suite (test/integration/stripe-billing.test.ts and the test/e2e/stripe-*.test.ts) runs
// the Billing port's Stripe adapter against it: docs/billing.md, "Stripe".
import { spawnSync } from 'node:child_process';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EngineError, HOST, PORTS, alive, assertPortFree, daemon, dir, has, log, portOpen, readPid, run, seconds, stopPid, waitHealthy } from './lib.mjs';

/** The one place the version is pinned (docs/operations.md#engines and docs/billing.md name it). */
export const VERSION = 'v0.203.0';
const PACKAGE = 'github.com/stripe/stripe-mock';

const home = () => dir('stripe-mock');
const binary = () => join(home(), 'bin', 'stripe-mock');
const installed = () => join(home(), 'bin', `.installed-${VERSION}`);
const files = () => ({ log: join(home(), 'stripe-mock.log'), pid: join(home(), 'stripe-mock.pid') });

export const stripeMock = {
  name: 'stripe-mock',
  label: `stripe-mock ${VERSION}`,
  port: PORTS.stripeMock,

  missing() {
    if (isInstalled()) return [];
    if (!has('go')) return ['go 1.21+ to build stripe-mock from the Go module proxy (https://go.dev/dl)'];
    const v = /go(\d+)\.(\d+)/.exec(spawnSync('go', ['version'], { encoding: 'utf8' }).stdout ?? '');
    if (!v || Number(v[1]) < 1 || (Number(v[1]) === 1 && Number(v[2]) < 21)) return [`go 1.21+ to build stripe-mock (found ${v ? v[0] : 'an unknown version'})`];
    return [];
  },

  async running() {
    return alive(readPid(files().pid)) && (await portOpen(PORTS.stripeMock));
  },

  async start() {
    await assertPortFree(PORTS.stripeMock, 'stripe-mock', 'ENGINES_STRIPE_MOCK_PORT');
    install();
    const f = files();
    const started = Date.now();
    // Both listeners on loopback: by default stripe-mock also serves HTTPS on every address.
    const args = ['-http-addr', `${HOST}:${PORTS.stripeMock}`, '-https-addr', `${HOST}:${PORTS.stripeMock + 1}`];
    const pid = daemon(binary(), args, { logFile: f.log, pidFile: f.pid, cwd: home() });
    await waitHealthy('stripe-mock', healthy, { timeoutMs: 30_000, pid, logFile: f.log });
    log(`stripe-mock: healthy on ${HOST}:${PORTS.stripeMock} in ${seconds(started)} (pid ${pid}, log ${f.log})`);
  },

  async stop() {
    return stopPid(files().pid);
  },

  /** Where the Stripe suite finds it; the suite gives the service its own test key and webhook secret. */
  env() {
    return { STRIPE_API_BASE: `http://${HOST}:${PORTS.stripeMock}` };
  },
};

function isInstalled() {
  return existsSync(installed()) && existsSync(binary());
}

/**
 * `go install github.com/stripe/stripe-mock@v0.203.0` (the source checked against the Go checksum
 * database) into a directory of its own first, so that an interrupted build leaves no binary.
 */
function install() {
  if (isInstalled()) return;
  const started = Date.now();
  log(`stripe-mock: building stripe-mock ${VERSION} from the Go module proxy (first use)…`);
  const staging = join(home(), `bin-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  try {
    run('go', ['install', '-trimpath', `${PACKAGE}@${VERSION}`], { env: { ...process.env, GOBIN: staging, GOFLAGS: '-mod=mod' } });
    rmSync(join(home(), 'bin'), { recursive: true, force: true });
    renameSync(staging, join(home(), 'bin'));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  writeFileSync(installed(), `${new Date().toISOString()}\n`);
  log(`stripe-mock: built in ${seconds(started)} (${binary()})`);
}

/** A request it must answer as Stripe would: a customer listed with a test key. */
async function healthy() {
  const res = await fetch(`${stripeMock.env().STRIPE_API_BASE}/v1/customers?limit=1`, { headers: { authorization: 'Bearer sk_test_123' } });
  return res.status === 200;
}
