import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { issueKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT } from '../../src/domain/accounts/api-keys.js';
import { runCli } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

describe('The scores CLI for accounts and billing', function () {
  this.timeout(120_000);
  const dir = tempDir();
  const env = testEnv(dir, '2024-03-15T12:00:00Z', { SCORES_DEMO: 'off' });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const json = async (args: string[]) => {
    const r = await runCli([...args, '--json'], env);
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
    return JSON.parse(r.stdout) as Record<string, any>;
  };

  it('creates a key, changes the plan, adds packs, switches overage and Pro, cancels, rotates and revokes', async () => {
    const created = await json(['keys', 'create', '--tier', 'hobbyist', '--email', 'cli@example.test']);
    expect(created).to.include({ tier: 'hobbyist', pro: false });
    expect(created['key']).to.match(/^sk_live_[A-Za-z0-9_-]{43}$/);
    const account = created['account_id'] as string;

    expect((await json(['plan', 'set', '--account', account, '--tier', 'builder']))['usage']).to.include({ tier: 'builder', monthly_allowance: 250_000 });
    expect((await json(['packs', 'add', '--account', account, '--credits', '5000']))['usage']).to.include({ prepaid_credits: 5000 });
    // A purchase reference is an idempotency key: the same purchase run twice credits it once.
    expect((await json(['packs', 'add', '--account', account, '--credits', '100', '--pack-id', 'inv-1']))['usage']).to.include({ prepaid_credits: 5100 });
    const again = await json(['packs', 'add', '--account', account, '--credits', '100', '--pack-id', 'inv-1']);
    expect(again).to.deep.include({ events: [], unchanged: 'pack inv-1 was added already' });
    expect(again['usage']).to.include({ prepaid_credits: 5100 });
    // Another purchase under the same reference is refused: the reference names one purchase.
    const reused = await runCli(['packs', 'add', '--account', account, '--credits', '900', '--pack-id', 'inv-1'], env);
    expect(reused.code).to.equal(1);
    expect(reused.stderr).to.match(/^error \(conflict\): Pack inv-1 was bought with 100 credits/);
    expect((await json(['overage', 'on', '--account', account]))['usage']).to.include({ allow_overage: true });
    expect((await json(['pro', 'on', '--account', account]))['usage']).to.include({ pro_member: true });
    const cancelled = await json(['plan', 'cancel', '--account', account]);
    expect(cancelled['usage']).to.include({ tier: 'builder', plan_ends_at: '2024-04-01T00:00:00.000Z' });

    const rotated = await json(['keys', 'rotate', created['key_id'] as string, '--grace', '60']);
    expect(rotated).to.include({ replaced_key_id: created['key_id'] });
    // A grace period runs on the wall clock, not the data's pinned by SCORES_NOW.
    expect(Date.parse(rotated['old_key_valid_until'] as string) - Date.now()).to.be.within(0, 60_000);
    // The account's plan as it stands: builder (cancelled, but until the month ends) with Pro.
    expect(rotated).to.include({ account_id: account, tier: 'builder', pro: true });
    expect((await json(['keys', 'revoke', rotated['key_id'] as string]))).to.include({ revoked: true });

    const audit = await json(['audit', '--account', account]);
    expect(audit).to.include({ ok: true });
  });

  it(`adds keys to an account up to ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active ones, refuses the next with limit_exceeded (exit 1), and revokes a key in its grace period`, async () => {
    const first = await json(['keys', 'create', '--tier', 'free']);
    const account = first['account_id'] as string;
    // All but the last key the cap allows in this process, on the same store (a CLI run each would take minutes)…
    const services = await openServices(loadConfig(env));
    try {
      for (let n = 2; n < MAX_ACTIVE_KEYS_PER_ACCOUNT; n++) await issueKey(services, account);
    } finally {
      await services.close();
    }
    // …the last one by the CLI, and one more is refused there.
    expect(await json(['keys', 'create', '--account', account])).to.include({ account_id: account, tier: 'free' });
    const refused = await runCli(['keys', 'create', '--account', account], env);
    expect(refused.code, refused.stdout).to.equal(1);
    expect(refused.stdout).not.to.match(/sk_live_/);
    expect(`${refused.stdout}${refused.stderr}`).to.include('limit_exceeded').and.to.include(`at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys`);

    const both = await runCli(['keys', 'create', '--account', account, '--tier', 'free'], env);
    expect(both.code).to.not.equal(0);
    expect(both.stderr).to.match(/--tier for a new account, or --account/);

    // A rotation at the cap replaces a key; the old key, in its grace period, can be revoked.
    await json(['keys', 'rotate', first['key_id'] as string, '--grace', '86400']);
    expect(await json(['keys', 'revoke', first['key_id'] as string])).to.include({ key_id: first['key_id'], revoked: true });
  });

  it('refuses overage on a free account and an unknown tier with a clear message', async () => {
    const free = await json(['keys', 'create', '--tier', 'free']);
    const r = await runCli(['overage', 'on', '--account', free['account_id'] as string], env);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(/bad_request/);
    // JSON without --json too (docs/operations.md: it prints JSON with account_id and key).
    const plain = await runCli(['keys', 'create', '--tier', 'builder'], env);
    expect(plain.code).to.equal(0);
    expect(JSON.parse(plain.stdout)).to.include({ tier: 'builder', pro: false, name: 'Key 1' }).and.to.have.keys('account_id', 'key_id', 'key', 'prefix', 'name', 'tier', 'pro');
    const bad = await runCli(['keys', 'create', '--tier', 'platinum'], env);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.match(/platinum/);
  });

  it('names a key with --name (else Key <n>, its place on the account) and refuses a name too long', async () => {
    const made = await json(['keys', 'create', '--tier', 'hobbyist', '--name', '  Nightly   job ']);
    expect(made).to.include({ name: 'Nightly job' });
    expect(await json(['keys', 'create', '--account', made['account_id'] as string])).to.include({ name: 'Key 2' });
    expect(await json(['keys', 'create', '--account', made['account_id'] as string, '--name', 'Backfill'])).to.include({ name: 'Backfill' });
    const long = await runCli(['keys', 'create', '--account', made['account_id'] as string, '--name', 'x'.repeat(61)], env);
    expect(long.code).to.equal(1);
    expect(long.stderr).to.match(/bad_request.*at most 60 characters/);
  });
});
