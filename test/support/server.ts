import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { readDemoKeys } from '../../src/app/demo-keys.js';
import { startServer, type RunningServer } from '../../src/app/server.js';
import type { Clock } from '../../src/core/clock.js';
import type { Tier } from '../../src/domain/plans.js';
import type { Logger } from 'pino';

/**
 * The demo account's key for a tier, as the server that started on `dir` (a test server's `dir`,
 * or the data directory of a server process) wrote it to `<dir>/demo-keys.json`: demo keys are
 * random, so a test reads them where the server keeps them.
 */
export function demoKey(dir: string, tier: Tier): string {
  const found = readDemoKeys(dir).find((k) => k.tier === tier);
  if (!found) throw new Error(`no demo key for ${tier} in ${dir}: has a server with the demo on started there?`);
  return found.key;
}

/** GET with an API key; the body parsed as JSON. */
export async function getJson(url: string, key?: string): Promise<{ status: number; headers: Headers; type: string; body: Record<string, any> }> {
  const res = await fetch(url, { headers: key ? { 'X-API-Key': key } : {} });
  const text = await res.text();
  return { status: res.status, headers: res.headers, type: res.headers.get('content-type') ?? '', body: text ? (JSON.parse(text) as Record<string, any>) : {} };
}

export interface TestServer {
  url: string;
  services: Services;
  running: RunningServer;
  dir: string;
  stop(): Promise<void>;
}

export function tempDir(prefix = 'scores-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * The variables that move a port to a real engine. `.ci/run` exports them (from `npm run engines`)
 * for the adapters' contract suites; a service under test stays on the embedded store unless the
 * test names them in `extra`.
 */
const ENGINE_VARIABLES = ['ESDB_URL', 'MONGODB_URI', 'MONGODB_DB', 'KAFKA_BROKERS', 'POSTGRES_URL', 'READ_STORE', 'POSTGRES_READ_URL', 'READ_MODELS_SCHEMA', 'STRIPE_API_BASE', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET'];

/** Environment for a service process on a temp data dir with a pinned clock. */
export function testEnv(dir: string, now: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !ENGINE_VARIABLES.includes(name)));
  // The nightly export would run at each start (no bundle yet): only the export tests want it.
  return { ...inherited, SCORES_DATA_DIR: dir, SCORES_NOW: now, PORT: '0', LOG_LEVEL: 'silent', HOST: '127.0.0.1', SCORES_EXPORTS_SCHEDULE: 'off', ...extra };
}

/** The cookies a response sets, as a Cookie header. */
export const cookiesOf = (res: Response): string =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .join('; ');

/** The wall clock moved by hand: real time plus what `advance` added (never pinned: time passes). */
export function wallClockPlus(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance(ms) {
      offset += ms;
    },
  };
}

/** A real HTTP server on a random port over a real SQLite file, seeded with the demo up to `now`. */
export async function startTestServer(options: { now: string; dir?: string; env?: Record<string, string>; log?: Logger; transportClock?: Clock; requestLogFlushMs?: number }): Promise<TestServer> {
  const dir = options.dir ?? tempDir();
  const services = await openServices(loadConfig(testEnv(dir, options.now, options.env)), { log: options.log, transportClock: options.transportClock, requestLogFlushMs: options.requestLogFlushMs });
  const running = await startServer(services, { progress: false, port: 0 });
  return {
    url: running.url,
    services,
    running,
    dir,
    async stop() {
      await running.shutdown();
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
