/**
 * Issue 46, "Must show": a key with a daily limit of N credits, calls worth 3N at once over REST,
 * the MCP client and MCP batches (and the ledger's own batching: many calls of one account queue
 * into one append): exactly N charged to the key, in the answers and in the ledger, the rest
 * refused with key_budget_exhausted, the account's other key answered every time. On one embedded
 * process (always), and on two API processes sharing a PostgreSQL log (the second an API replica
 * following the first's read models), which decide on one ledger stream.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { createAccountWithKey, issueKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { chargedByKey, expectExactSpend, raceKeyBudget } from '../support/key-budget-race.js';
import { enginesFor, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { startMember, stopMember, type Member } from '../support/fleet-members.js';
import { until } from '../support/processes.js';
import { startTestServer, type TestServer } from '../support/server.js';

const NOW = '2019-01-15T12:00:00Z';
const LIMIT = 300;
const OTHER_CALLS = 40;

/** A quant account (credits to spare, no request-rate limit) with a key limited to LIMIT a day and a key without limits. */
async function accountWithKeys(services: Services) {
  const limited = await createAccountWithKey(services, { tier: 'quant', name: 'agent', limits: { daily_credit_limit: LIMIT } });
  await setRateLimit(services, limited.account_id, 'unlimited');
  const other = await issueKey(services, limited.account_id, 'owner');
  return { account: limited.account_id, limited, other };
}

/** GET /v1/keys with `key` on `url`: the listed key `keyId`. */
async function listed(url: string, key: string, keyId: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${url}/v1/keys`, { headers: { 'X-API-Key': key } });
  expect(r.status).to.equal(200);
  return ((await r.json()) as { keys: Record<string, unknown>[] }).keys.find((k) => k['key_id'] === keyId)!;
}

describe('A key’s daily credit limit under concurrent calls (REST, MCP, MCP batches)', function () {
  this.timeout(300_000);

  describe('on one embedded process', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ now: NOW });
    });
    after(() => server?.stop());

    it(`charges exactly ${LIMIT} credits of 3 × ${LIMIT} to the key, refuses the rest with key_budget_exhausted, and serves the account's other key`, async () => {
      const { account, limited, other } = await accountWithKeys(server.services);
      await server.services.runner.waitForHead();
      const outcomes = await raceKeyBudget([server.url], limited.key, other.key, LIMIT, OTHER_CALLS);
      expectExactSpend(outcomes, LIMIT, OTHER_CALLS);
      const charged = await chargedByKey(server.services.events, account);
      expect(charged.get(limited.key_id), 'the ledger’s debits of the limited key').to.equal(LIMIT);
      expect(charged.get(other.key_id)).to.equal(OTHER_CALLS * 2);
      expect(await listed(server.url, other.key, limited.key_id)).to.include({ daily_credit_limit: LIMIT, spent_today: LIMIT, budget_remaining: 0 });
    });
  });

  describe('on two API processes sharing a PostgreSQL log', () => {
    const engines = enginesFor('postgres');
    const unset = unsetEngines(engines);
    if (unset.length > 0) {
      it(`runs when ${engines.join(', ')} is set (npm run engines starts the engines and prints it; unset: ${unset.join(', ')})`);
      return;
    }
    let sandbox: EnginesSandbox;
    let services: Services;
    const members: Member[] = [];
    const spawned: ChildProcess[] = [];

    before(async () => {
      sandbox = await openEnginesSandbox('keybudget', NOW);
      // The whole service first (it seeds the empty store and projects), then an API replica following its read models.
      members.push(await startMember('all', sandbox.env, 0, 300_000, (c) => spawned.push(c)));
      members.push(await startMember('api', sandbox.env, 0, 300_000, (c) => spawned.push(c)));
      services = await openServices(loadConfig(sandbox.env));
    });
    after(async () => {
      for (const m of members) await stopMember(m);
      for (const c of spawned) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await services?.close();
      await sandbox?.drop();
    });

    it(`charges exactly ${LIMIT} credits of 3 × ${LIMIT} across both, refuses the rest with key_budget_exhausted, and serves the account's other key`, async () => {
      const { account, limited, other } = await accountWithKeys(services);
      const urls = members.map((m) => m.url);
      // Both processes know both keys (the replica reads the read models the first one projects).
      await until(async () => (await Promise.all(urls.flatMap((u) => [limited.key, other.key].map((k) => fetch(`${u}/v1/usage`, { headers: { 'X-API-Key': k } }))))).every((r) => r.status === 200), 60_000, 200);
      const outcomes = await raceKeyBudget(urls, limited.key, other.key, LIMIT, OTHER_CALLS);
      expectExactSpend(outcomes, LIMIT, OTHER_CALLS);
      const charged = await chargedByKey(services.events, account);
      expect(charged.get(limited.key_id), 'the ledger’s debits of the limited key').to.equal(LIMIT);
      expect(charged.get(other.key_id)).to.equal(OTHER_CALLS * 2);
      for (const url of urls) expect(await listed(url, other.key, limited.key_id)).to.include({ spent_today: LIMIT, budget_remaining: 0 });
    });
  });
});
