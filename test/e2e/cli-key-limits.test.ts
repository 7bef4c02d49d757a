/**
 * Key limits from the operator's CLI while a server runs on the same store: `scores keys create`
 * with limits, the server enforcing them, `scores keys list` showing them with the key's spend
 * and last use, `scores keys limits` changing them (the server enforcing the change), and the
 * CLI's refusals of bad values.
 */
import { expect } from 'chai';
import { runCli, until } from '../support/processes.js';
import { startTestServer, testEnv, type TestServer } from '../support/server.js';

const NOW = '2019-03-15T12:00:00Z';

describe('Key limits from the scores CLI', function () {
  this.timeout(180_000);
  let server: TestServer;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    server = await startTestServer({ now: NOW });
    env = testEnv(server.dir, NOW);
  });
  after(() => server?.stop());

  const json = async (args: string[]) => {
    const r = await runCli([...args, '--json'], env);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
    return JSON.parse(r.stdout) as Record<string, any>;
  };
  const api = async (method: string, path: string, key: string, body?: unknown) => {
    const r = await fetch(`${server.url}${path}`, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: r.status, budget: r.headers.get('x-key-budget-remaining'), body: (await r.json()) as Record<string, any> };
  };
  /** The server knows a key the CLI made once its read models have it (a second at most). */
  const known = (key: string) => until(async () => (await fetch(`${server.url}/v1/usage`, { headers: { 'X-API-Key': key } })).status !== 401, 10_000, 50);

  it('creates a key with limits, which the server enforces; lists them with the spend; changes them; refuses bad values', async () => {
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const created = await json(['keys', 'create', '--tier', 'quant', '--name', 'agent', '--daily-limit', '4', '--read-only', '--operations', 'scores,get_usage,webhooks', '--expires-at', expires]);
    expect(created['limits']).to.deep.equal({ daily_credit_limit: 4, monthly_credit_limit: null, expires_at: expires, scope: 'read_only', operations: ['scores', 'usage', 'webhooks'] });
    const account = created['account_id'] as string;
    const agent = created['key'] as string;
    const owner = await json(['keys', 'create', '--account', account, '--name', 'owner']);
    expect(owner['limits']).to.include({ daily_credit_limit: null, scope: 'all' });
    await known(agent);

    expect(await api('GET', '/v1/scores/AAPL', agent)).to.include({ status: 200, budget: '2' });
    expect(await api('GET', '/v1/scores/MSFT', agent)).to.include({ status: 200, budget: '0' });
    const over = await api('GET', '/v1/scores/AAPL', agent);
    expect(over.status).to.equal(429);
    expect(over.body).to.include({ code: 'key_budget_exhausted', limit: 4, spent: 4 });
    // Read-only: no webhook registration (its operation is listed: the scope refuses it).
    const hook = await api('POST', '/v1/webhooks', agent, { event_type: 'score_move', url: 'https://hooks.example.com/x' });
    expect(hook.status).to.equal(403);
    expect(hook.body).to.include({ code: 'key_scope_forbidden', operation: 'webhooks' });
    expect((await api('GET', '/v1/screener', agent)).body).to.include({ code: 'key_scope_forbidden', operation: 'screener' });
    expect((await api('GET', '/v1/scores/AAPL', owner['key'] as string)).status).to.equal(200);

    const listed = await json(['keys', 'list', '--account', account]);
    const row = (listed['keys'] as Record<string, any>[]).find((k) => k['key_id'] === created['key_id'])!;
    expect(row).to.deep.include({ name: 'agent', daily_credit_limit: 4, scope: 'read_only', spent_today: 4, spent_this_month: 4, budget_remaining: 0 });
    expect(row['last_used_at']).to.be.a('string');
    const human = await runCli(['keys', 'list', '--account', account], env);
    expect(human.stdout).to.include(`${created['key_id']}  agent  active: 4 credits a day, expires ${expires}, read-only, only scores, usage, webhooks; spent 4 today, 4 this month`);

    const lifted = await json(['keys', 'limits', created['key_id'] as string, '--daily-limit', 'none', '--monthly-limit', '100', '--scope', 'all', '--operations', 'all']);
    expect(lifted).to.deep.include({ changed: true, limits: { daily_credit_limit: null, monthly_credit_limit: 100, expires_at: expires, scope: 'all', operations: null } });
    await until(async () => (await api('GET', '/v1/scores/AAPL', agent)).status === 200, 10_000, 50);
    expect((await api('GET', '/v1/scores/AAPL', agent)).budget).to.equal(String(100 - 8));
    expect((await json(['keys', 'limits', created['key_id'] as string, '--monthly-limit', '100']))['changed']).to.equal(false);

    for (const [args, message] of [
      [['--daily-limit', '-3'], /daily_credit_limit is a whole number of credits from 1/],
      [['--operations', 'scores,teleport'], /Unknown operation "teleport"/],
      [['--expires-at', '2001-01-01T00:00:00Z'], /expires_at must be in the future/],
      [['--scope', 'root'], /scope is all or read_only/],
    ] as const) {
      const refused = await runCli(['keys', 'limits', created['key_id'] as string, ...args], env);
      expect(refused.code, args.join(' ')).to.equal(1);
      expect(refused.stderr).to.match(/^error \(bad_request\): /).and.to.match(message);
    }
  });
});
