import autocannon from 'autocannon';
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createAccountWithKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { openFront, startFleet } from '../../src/app/fleet/fleet.js';
import { findNginx } from '../../src/app/fleet/nginx-front.js';
import { callerOf, chooseMember, hash32 } from '../../src/app/fleet/key-routing.js';
import { projectRoot } from '../../src/core/paths.js';
import type { Tier } from '../../src/domain/plans.js';
import { inEnginesSandbox } from '../support/engines-sandbox.js';
import { until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';
import { start } from './http.bench.js';
import { fmt, median } from './stats.js';

/**
 * The demo up to the end of March 2019 (36,960 score rows) on both sides: on PostgreSQL the whole
 * history takes 30-60 s per seed or replay here, and the fleet seeds it once more, which would take
 * a run past the 15 minutes this benchmark may last.
 */
export const NOW = '2019-03-29T12:00:00Z';
const CLI = 'dist/src/app/cli/bin.js';
const PATH = '/v1/scores/AAPL';
/** Every account's rate: above any load here, so each call is checked and none is refused. */
const RATE = 1_000_000;
const LISTENING = /"listening":"http:\/\/[^"]+:(\d+)"/;
export const TIERS = ['free', 'hobbyist', 'quant'] as const;
type TierName = (typeof TIERS)[number];

export interface Load {
  rps: number;
  p99: number;
}
export interface Latency {
  median: number;
  p99: number;
}

/** One list per figure, one entry per run. */
export interface ServingRuns {
  embedded: Load[];
  oneApi: Load[];
  twoApis: Load[];
  soloOne: Load[];
  soloTwo: Load[];
  tiers: Record<TierName, Latency>[];
  /** How the front of two API processes splits the keys. */
  split: string;
}

interface Proc {
  url: string;
  stop(): Promise<void>;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** A built entry point run by node; `pattern` captures the port it announces. */
async function spawnListening(args: string[], env: NodeJS.ProcessEnv, pattern: RegExp): Promise<Proc> {
  const { child, port } = await start(args, env, pattern);
  return { url: `http://127.0.0.1:${port}`, stop: () => stopChild(child) };
}

/**
 * The front `scores fleet up` runs (openFront): nginx where it is installed, else the in-process
 * front (front.ts), here in a process of its own so that it does not share the load generator's thread.
 */
async function front(targets: string[]): Promise<Proc> {
  if (!findNginx()) return spawnListening(['dist/test/bench/front-process.js', ...targets], process.env, /front listening on http:\/\/localhost:(\d+)/);
  const nginx = await openFront(targets, { port: 0, host: '127.0.0.1' }, { FLEET_FRONT: 'nginx', PATH: process.env['PATH'] });
  return { url: nginx.url, stop: () => nginx.close() };
}

/** The credits an API process has debited so far (its /metrics). */
async function debited(api: string): Promise<number> {
  const text = await (await fetch(`${api}/metrics`)).text();
  return [...text.matchAll(/^scores_credits_debited_total(?:\{[^}]*\})? (\S+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

/**
 * Which of `apis` the front `via` sends each key to: with the in-process front, as its rendezvous
 * hashing computes it; with nginx (a ketama ring of its own), by a call of each key and the
 * process whose debits grew.
 */
async function homesOf(via: string, apis: readonly string[], keys: readonly string[]): Promise<Map<string, number>> {
  if (!findNginx()) return new Map(keys.map((k) => [k, routedTo(k, apis)]));
  const homes = new Map<string, number>();
  for (const key of keys) {
    const before = await Promise.all(apis.map(debited));
    await timedGet(via, key);
    const after = await Promise.all(apis.map(debited));
    const grew = after.findIndex((n, i) => n > before[i]!);
    if (grew < 0) throw new Error(`no API process debited the call of key ${key.slice(0, 12)}…`);
    homes.set(key, grew);
  }
  return homes;
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `scores serve` on a temporary data directory: embedded SQLite, in-process bus, every job. */
async function embeddedServer(): Promise<Proc & { env: NodeJS.ProcessEnv }> {
  const dir = tempDir('scores-bench-scale-embedded-');
  const env = testEnv(dir, NOW, { PUBLIC_BASE_URL: 'http://localhost' });
  const server = await spawnListening([CLI, 'serve', '--port', '0', '--json'], env, LISTENING);
  return { url: server.url, env, stop: () => server.stop().finally(() => rmSync(dir, { recursive: true, force: true })) };
}

/** One account per tier given, each with a key and the rate RATE; the keys, in that order. */
async function issueKeys(env: NodeJS.ProcessEnv, tiers: readonly Tier[]): Promise<string[]> {
  const services = await openServices(loadConfig({ ...env, SCORES_DEMO: 'off' }));
  try {
    const keys: string[] = [];
    for (const tier of tiers) {
      const { account_id, key } = await createAccountWithKey(services, { tier });
      await setRateLimit(services, account_id, RATE);
      keys.push(key);
    }
    return keys;
  } finally {
    await services.close();
  }
}

/** Until `base` knows each key and its account's rate (GET /v1/usage costs nothing). */
async function untilServed(base: string, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    await until(
      async () => {
        const res = await fetch(`${base}/v1/usage`, { headers: { 'X-API-Key': key } });
        await res.arrayBuffer();
        return res.ok && Number(/q=(\d+)/.exec(res.headers.get('RateLimit-Policy') ?? '')?.[1] ?? 0) >= RATE;
      },
      60_000,
      200,
    );
  }
}

/**
 * autocannon's clients, made to reconnect before their next request when an answer says
 * `Connection: close`, as the fleet's front's answers do (http-proxy-3 without a keep-alive agent).
 * autocannon 9 writes the next request on the closing socket and then times later answers from
 * earlier requests' starts: one connection through the front read a median of 1.1 s at 45 calls
 * a second. Its client's `_doRequest` runs again once the new connection opens.
 */
function reconnectOnClose(client: any): void {
  let closing = false;
  client.on('headers', (info: { shouldKeepAlive: boolean }) => (closing = !info.shouldKeepAlive));
  const doRequest = client._doRequest as (...args: unknown[]) => unknown;
  if (typeof doRequest !== 'function') throw new Error('autocannon changed: its client has no _doRequest to wrap');
  client._doRequest = function (this: unknown, ...args: unknown[]) {
    if (!closing) return doRequest.apply(this, args);
    closing = false;
  };
}

/** autocannon at 50 connections, the keys taking turns; refuses a run with a non-2xx answer or an error. */
async function loadKeys(base: string, keys: readonly string[], seconds: number): Promise<Load> {
  const requests = keys.map((k) => ({ method: 'GET' as const, headers: { 'X-API-Key': k } }));
  const r = await autocannon({ url: `${base}${PATH}`, connections: 50, duration: seconds, requests, setupClient: reconnectOnClose });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${base}: ${r.non2xx} non-2xx responses, ${r.errors} errors`);
  return { rps: r.requests.average, p99: r.latency.p99 };
}

/** The value at or below which a share `p` of `xs` lies (nearest rank). */
function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

async function timedGet(base: string, key: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${base}${PATH}`, { headers: { 'X-API-Key': key } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${base}${PATH}: ${res.status}`);
  return performance.now() - t0;
}

/**
 * `calls` sequential calls per tier after 10 of warm-up, the tiers taking turns call by call so
 * that the machine's drift falls on each alike. A free account has 1,000 credits a month (500 of
 * these calls): each run uses accounts of its own.
 */
async function tierLatencies(base: string, keys: Record<TierName, string>, calls: number): Promise<Record<TierName, Latency>> {
  const ms = { free: [] as number[], hobbyist: [] as number[], quant: [] as number[] };
  for (let i = 0; i < 10 + calls; i++) {
    for (const tier of TIERS) {
      const t = await timedGet(base, keys[tier]);
      if (i >= 10) ms[tier].push(t);
    }
  }
  const of = (xs: number[]): Latency => ({ median: median(xs), p99: percentile(xs, 0.99) });
  return { free: of(ms.free), hobbyist: of(ms.hobbyist), quant: of(ms.quant) };
}

/** The keys a fleet's runs use: 8 quant accounts, one more quant account alone, one account per tier per run. */
interface FleetKeys {
  quant: string[];
  solo: string;
  tiers: Record<TierName, string>[];
}

/**
 * The 8 quant accounts are picked 4 for each of `apis`, as the front routes them: with many
 * accounts its hashing spreads them evenly, with 8 drawn at random it may send 6 to one process.
 */
async function fleetKeys(keys: string[], runs: number, apis: readonly string[], homes: Map<string, number>): Promise<FleetKeys> {
  const quant = keys.slice(0, 16);
  const even = apis.flatMap((_, i) => quant.filter((k) => homes.get(k) === i).slice(0, 4));
  const tiers = Array.from({ length: runs }, (_, i) => Object.fromEntries(TIERS.map((t, k) => [t, keys[17 + i * TIERS.length + k]!])) as Record<TierName, string>);
  return { quant: [...even, ...quant.filter((k) => !even.includes(k))].slice(0, 8), solo: keys[16]!, tiers };
}

/** The index in `apis` of the process the front sends `key`'s calls to (rendezvous hashing of the key over the URLs). */
function routedTo(key: string, apis: readonly string[]): number {
  const members = apis.map((url, index) => ({ index, hash: hash32(url), healthy: true }));
  return chooseMember(callerOf({ 'x-api-key': key })!, members)!.index;
}

/** How the front of two API processes splits the 8 keys, and where the lone account goes. */
function splitOf(keys: FleetKeys, apis: readonly string[], homes: Map<string, number>): string {
  const counts = apis.map((_, i) => keys.quant.filter((k) => homes.get(k) === i).length);
  return `${findNginx() ? 'nginx' : 'in-process'} front, the 8 keys ${counts.join(' + ')}, the one account on API ${homes.get(keys.solo)! + 1}`;
}

/** The second API process on `port` (the same each time, so the keys' split stays), until `run` is done. */
async function withSecondApi<T>(env: NodeJS.ProcessEnv, port: number, run: () => Promise<T>): Promise<T> {
  const second = await spawnListening([CLI, 'serve', '--role', 'api', '--port', String(port), '--json'], env, LISTENING);
  try {
    // The front checks its processes every second: until then it sends the second's keys to the first.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return await run();
  } finally {
    await second.stop();
  }
}

/** What the runs share: the embedded server and its keys; the fleet's env, its keys, a front over its API process and one over both. */
interface Setup {
  embedded: { url: string; keys: string[] };
  env: NodeJS.ProcessEnv;
  keys: FleetKeys;
  /** Where the second API process listens, when it runs. */
  port: number;
  one: string;
  two: string;
}

async function oneRun(setup: Setup, i: number, seconds: number, out: ServingRuns): Promise<void> {
  const { embedded, keys } = setup;
  out.embedded.push(await loadKeys(embedded.url, embedded.keys, seconds));
  out.oneApi.push(await loadKeys(setup.one, keys.quant, seconds));
  out.soloOne.push(await loadKeys(setup.one, [keys.solo], seconds));
  out.tiers.push(await tierLatencies(setup.one, keys.tiers[i]!, 200));
  await withSecondApi(setup.env, setup.port, async () => {
    await untilServed(setup.two, [...keys.quant, keys.solo]);
    await loadKeys(setup.two, keys.quant, 5); // the new process's warm-up (its code is not compiled yet)
    out.twoApis.push(await loadKeys(setup.two, keys.quant, seconds));
    out.soloTwo.push(await loadKeys(setup.two, [keys.solo], seconds));
  });
  const last = (xs: Load[]) => `${fmt(xs.at(-1)!.rps, 0)}`;
  process.stderr.write(
    `  run ${i + 1}: req/s embedded ${last(out.embedded)}, 1 API ${last(out.oneApi)}, 2 APIs ${last(out.twoApis)}; one account ${last(out.soloOne)} / ${last(out.soloTwo)}; ` +
      `median ms free ${fmt(out.tiers[i]!.free.median, 2)}, quant ${fmt(out.tiers[i]!.quant.median, 2)}\n`,
  );
}

async function measure(setup: Setup, runs: number, seconds: number, split: string): Promise<ServingRuns> {
  const out: ServingRuns = { embedded: [], oneApi: [], twoApis: [], soloOne: [], soloTwo: [], tiers: [], split };
  await loadKeys(setup.embedded.url, setup.embedded.keys, 2); // warm-up
  await loadKeys(setup.one, setup.keys.quant, 2);
  await loadKeys(setup.one, [setup.keys.solo], 2);
  for (let i = 0; i < runs; i++) await oneRun(setup, i, seconds, out);
  return out;
}

/**
 * A fleet on PostgreSQL + Kafka (one worker, one `scores serve --role api`) in a sandbox of its own,
 * its accounts, a front over its API process and one over it and a second, for `run`. Each front
 * runs in a process of its own, as `scores fleet up` runs it, and lives through every run, so that
 * both are as warm; the second API process runs only for its turns (withSecondApi).
 */
function withFleet<T>(runs: number, run: (setup: Omit<Setup, 'embedded'>, split: string) => Promise<T>): Promise<T> {
  return inEnginesSandbox('scale', NOW, { kafka: true, extra: { PUBLIC_BASE_URL: 'http://localhost' } }, async ({ env }) => {
    process.argv[1] = join(projectRoot(), CLI); // the fleet's processes run the built CLI, as `npm run fleet` does
    const fleet = await startFleet({ apis: 1, workers: 1, port: 0, host: '127.0.0.1', env });
    const fronts: Proc[] = [];
    try {
      const apis = [fleet.processes.find((p) => p.role === 'api')!.url, `http://127.0.0.1:${await freePort()}`];
      fronts.push(await front(apis.slice(0, 1)), await front(apis));
      const port = Number(new URL(apis[1]!).port);
      const issued = await issueKeys(env, [...Array.from({ length: 17 }, () => 'quant' as const), ...Array.from({ length: runs }, () => TIERS).flat()]);
      const candidates = issued.slice(0, 17);
      await untilServed(fronts[0]!.url, issued);
      const homes = await withSecondApi(env, port, async () => {
        await untilServed(apis[1]!, candidates);
        return homesOf(fronts[1]!.url, apis, candidates);
      });
      const keys = await fleetKeys(issued, runs, apis, homes);
      return await run({ env, keys, port, one: fronts[0]!.url, two: fronts[1]!.url }, splitOf(keys, apis, homes));
    } finally {
      for (const f of fronts) await f.stop();
      await fleet.stop();
    }
  });
}

/**
 * The serving figures, every run taking them in turn on one machine: the embedded all-in-one
 * (`scores serve`: embedded SQLite, in-process bus) and the fleet through its front with one API
 * process and with two.
 */
export async function servingRuns(runs: number, seconds: number): Promise<ServingRuns> {
  const embedded = await embeddedServer();
  try {
    const keys = await issueKeys(embedded.env, Array.from({ length: 8 }, () => 'quant'));
    await untilServed(embedded.url, keys);
    return await withFleet(runs, (fleet, split) => measure({ ...fleet, embedded: { url: embedded.url, keys } }, runs, seconds, split));
  } finally {
    await embedded.stop();
  }
}
