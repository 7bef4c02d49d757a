/**
 * Read your own writes on any replica (docs/scaling.md): a write answered by one API process, then
 * the read of it sent to the other, while metered calls keep both busy. Two `scores serve --role
 * api` processes and one `scores worker` on the engines, the read models on FLEET_READ_STORE
 * (PostgreSQL, or FerretDB with SCORES_FLEET_READ_STORE=mongodb). test/e2e/read-your-writes.test.ts
 * proves the wait on one embedded process in every run.
 */
import { expect } from 'chai';
import { FormBrowser, linksTo } from '../support/form-browser.js';
import { startMember, stopMember, type Member } from '../support/fleet-members.js';
import { FLEET_ENGINES, FLEET_READ_STORE, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { demoKey } from '../support/server.js';
import type { Tier } from '../../src/domain/plans.js';

const NOW = '2019-01-10T12:00:00Z';
const ROUNDS = 20;
/** Metered calls looping on each API process, with keys of their own. */
const LOAD_LOOPS = 2;
const LOAD_TIERS: readonly Tier[] = ['builder', 'enterprise'];
const EMAIL = 'ryw.owner@example.com';

interface Answer {
  status: number;
  body: Record<string, any>;
}

/** Calls with `key` to `member`, JSON in and out. */
async function call(member: Member, method: string, path: string, key: string, json?: unknown): Promise<Answer> {
  const res = await fetch(`${member.url}${path}`, {
    method,
    headers: { 'X-API-Key': key, ...(json === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : {} };
}

/** `GET /v1/scores/AAPL` in loops on every member until stopped: the answers by status. */
function meteredLoad(members: readonly Member[], keys: readonly string[]): { stop(): Promise<Map<number, number>> } {
  let stopped = false;
  const statuses = new Map<number, number>();
  const loop = async (member: Member, key: string) => {
    while (!stopped) {
      const res = await fetch(`${member.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } }).catch(() => null);
      await res?.arrayBuffer();
      const status = res?.status ?? 0;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  const loops = members.flatMap((m) => Array.from({ length: LOAD_LOOPS }, (_, i) => loop(m, keys[i % keys.length]!)));
  return {
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return statuses;
    },
  };
}

/** Milliseconds `run` took, recorded under `what`. */
async function timed<T>(waits: Map<string, number[]>, what: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const out = await run();
  waits.set(what, [...(waits.get(what) ?? []), performance.now() - started]);
  return out;
}

function summary(ms: readonly number[]): string {
  const sorted = [...ms].sort((x, y) => x - y);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0);
  return `median ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(1)} ms`;
}

describe('Read your own writes on any replica: written on one API process, read on the other, under load', function () {
  this.timeout(900_000);
  const unset = unsetEngines(FLEET_ENGINES);
  if (unset.length > 0) {
    it(`runs on the engines when ${FLEET_ENGINES.join(', ')} are set (npm run engines prints them; unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;
  const members: Member[] = [];
  let a: Member;
  let b: Member;
  /** The account page's browser: one session, sent to A or to B. */
  let on: Member;
  const browser = new FormBrowser(() => on.url, '10.77.0.1');

  before(async () => {
    sandbox = await openEnginesSandbox('ryw', NOW, { kafka: true, readStore: FLEET_READ_STORE, extra: { WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8', TRUST_PROXY: 'loopback' } });
    console.log(`      (read models on ${FLEET_READ_STORE})`);
    members.push(await startMember('worker', sandbox.env, 0, 240_000));
    // One after the other: the first seeds the empty store.
    a = await startMember('api', sandbox.env, 0, 600_000);
    members.push(a);
    b = await startMember('api', sandbox.env, 0, 600_000);
    members.push(b);
  });

  after(async () => {
    for (const m of members.reverse()) await stopMember(m);
    await sandbox?.drop();
  });

  async function signIn(): Promise<void> {
    on = a;
    const form = await browser.request('/account/sign-in');
    await browser.submit(form.text, '/account/sign-in', { email: EMAIL });
    const [token] = linksTo(sandbox.dir, EMAIL);
    const confirm = await browser.request(`/account/sign-in/${token}`);
    expect((await browser.submit(confirm.text, `/account/sign-in/${token}`)).status).to.equal(200);
  }

  /** Registered, tested and deleted on A; each time listed on B. */
  async function webhookRound(round: number, quant: string, waits: Map<string, number[]>): Promise<void> {
    const registered = await call(a, 'POST', '/v1/webhooks', quant, { event_type: 'score_move', url: `https://127.0.0.1:9/round-${round}` });
    expect(registered.status, JSON.stringify(registered.body)).to.equal(201);
    const id = registered.body['id'] as number;
    const listed = await timed(waits, 'GET /v1/webhooks after a registration', () => call(b, 'GET', '/v1/webhooks', quant));
    expect(listed.body['webhooks'].map((w: { id: number }) => w.id), `round ${round}: webhook ${id} on B`).to.include(id);
    // The same read once nothing is left to wait for: what a read costs under this load anyway.
    await timed(waits, 'GET /v1/webhooks again, nothing to wait for', () => call(b, 'GET', '/v1/webhooks', quant));

    expect((await call(a, 'POST', `/v1/webhooks/${id}/test`, quant, {})).status).to.equal(200);
    const deliveries = await timed(waits, 'GET /v1/webhooks/{id}/deliveries after a test delivery', () => call(b, 'GET', `/v1/webhooks/${id}/deliveries`, quant));
    expect(deliveries.body['count'], `round ${round}: the test delivery of webhook ${id} on B`).to.equal(1);

    expect((await call(a, 'DELETE', `/v1/webhooks/${id}`, quant)).status).to.equal(200);
    const after = await timed(waits, 'GET /v1/webhooks after a deletion', () => call(b, 'GET', '/v1/webhooks', quant));
    expect(after.body['webhooks'].map((w: { id: number }) => w.id), `round ${round}: webhook ${id} deleted, on B`).not.to.include(id);
  }

  /** Created on A's account page; listed on B's, and working on B at once; revoked on A. */
  async function keyRound(round: number, waits: Map<string, number[]>): Promise<void> {
    on = a;
    const created = await browser.submit((await browser.request('/account')).text, '/account/keys');
    expect(created.status, created.text.slice(0, 300)).to.equal(303);
    const key = /id="new-key"[^>]*>([^<]+)</.exec((await browser.request('/account')).text)![1]!;
    on = b;
    const page = await timed(waits, 'GET /account after a key was created', () => browser.request('/account'));
    const id = new RegExp(`<code>${key.slice(0, 14)}…</code></td><td[^>]*>([^<]+)</td>`).exec(page.text)?.[1];
    expect(id, `round ${round}: the new key on B's account page`).to.be.a('string');
    const usage = await call(b, 'GET', '/v1/usage', key);
    expect(usage.status, `round ${round}: the new key on B: ${JSON.stringify(usage.body)}`).to.equal(200);
    on = a;
    expect((await browser.submit(page.text, `/account/keys/${id}/revoke`)).status).to.equal(303);
  }

  it(`finds each of ${ROUNDS} writes answered by A when reading on B (webhooks, their test deliveries, keys), while metered calls load both`, async () => {
    const quant = demoKey(sandbox.dir, 'quant');
    await signIn();
    const load = meteredLoad([a, b], LOAD_TIERS.map((t) => demoKey(sandbox.dir, t)));
    const waits = new Map<string, number[]>();
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        await webhookRound(round, quant, waits);
        await keyRound(round, waits);
      }
    } finally {
      const statuses = await load.stop();
      console.log(`      background load: ${[...statuses].map(([s, n]) => `${n} × ${s}`).join(', ')}`);
      for (const [what, ms] of waits) console.log(`      ${what} on B: ${summary(ms)}`);
    }
  });
});
