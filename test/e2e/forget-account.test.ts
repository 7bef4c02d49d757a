import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { issueInvoice } from '../../commands/billing/invoice.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { registerWebhook } from '../../commands/manage-webhooks/webhooks.handler.js';
import { sendSignInLink } from '../../commands/sign-in/sign-in.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { forgetAccount } from '../../src/app/forget-account.js';
import { stateAt, usageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { pgSession } from '../../infra/postgresql/database.js';
import { openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { getInvoice } from '../../queries/get-invoices/get-invoices.query.js';
import { listWebhooks } from '../../queries/get-webhooks/get-webhooks.query.js';
import { everyFile } from '../support/data-files.js';
import { FormBrowser, linksTo } from '../support/form-browser.js';
import { runCli } from '../support/processes.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/receiver-certificate.js';
import { snapshotReadModels } from '../support/snapshot.js';
import { startTestServer, tempDir, testEnv, type TestServer } from '../support/server.js';

const NOW = '2024-04-20T12:00:00Z';
const EMAIL = 'forget.me@example.com';
/** A restart in May: its first call closes April's ledger month, which is then invoiced. */
const LATER = '2024-05-02T09:00:00Z';

/** What an auditor checks stays exact: the account's figures now, from its ledger. */
async function figures(services: Services, account: string) {
  return usageFigures(stateAt(await services.ledger.state(account), services.clock.now()), services.clock.now());
}

/** Where `needles` occur in any file under `dir` (none: forgotten). */
function foundIn(dir: string, needles: string[]): string[] {
  return everyFile(dir).flatMap(({ path, bytes }) => needles.filter((n) => bytes.includes(n)).map((n) => `${n} in ${path}`));
}

/**
 * Issue 42, item 3: an account with calls, an invoice, a webhook and mails is forgotten from its
 * own account page (real HTTP, the CSRF-protected form). Afterwards no file of the data directory
 * holds its address or its webhook secret, `scores audit --all` passes, a replay rebuilds the same
 * read models and the credit figures are what they were.
 */
describe('Forgetting an account (crypto-shredding)', function () {
  this.timeout(240_000);
  let server: TestServer;
  let receiver: HttpsReceiver;
  const dir = tempDir();
  const certDir = tempDir('scores-forget-cert-');
  const b = new FormBrowser(() => server.url, '10.9.0.1');

  const start = (now: string) => startTestServer({ now, dir, env: { TRUST_PROXY: 'loopback', WEBHOOK_CA_FILE: receiver.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' } });
  before(async () => {
    receiver = await startHttpsReceiver(certDir);
    server = await start(NOW);
  });
  after(async () => {
    await server?.stop();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(certDir, { recursive: true, force: true });
  });

  /** Signs in by the mailed link: the new key shown once, and the account the page names. */
  async function signIn(email: string): Promise<{ key: string; account: string }> {
    const before = new Set(linksTo(dir, email));
    const form = await b.request('/account/sign-in');
    await b.submit(form.text, '/account/sign-in', { email });
    const token = linksTo(dir, email).find((t) => !before.has(t))!;
    const confirm = await b.request(`/account/sign-in/${token}`);
    expect(confirm.text).to.include(email);
    const answer = await b.submit(confirm.text, `/account/sign-in/${token}`);
    const page = await b.request('/account');
    return { key: /sk_live_[A-Za-z0-9_-]{43}/.exec(answer.text)?.[0] ?? '', account: /account <code>(acct_[0-9a-f]+)<\/code>/.exec(page.text)?.[1] ?? '' };
  }

  const api = async (path: string, key: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  it('forgets the address and the secrets everywhere, while the ledger, the audit, the figures and a replay hold', async () => {
    let s = server.services;
    const { key, account } = await signIn(EMAIL);
    expect(key, 'the first sign-in shows the new key').to.match(/^sk_live_/);
    expect(account).to.match(/^acct_/);
    // A second mail, and the account's calls, webhook and invoice.
    await sendSignInLink({ ...s, baseUrl: server.url }, EMAIL);
    await s.ledger.changePlan(account, 'quant');
    for (const ticker of ['AAPL', 'MSFT', 'AAPL']) expect((await api(`/v1/scores/${ticker}`, key)).status).to.equal(200);
    const hook = await api('/v1/webhooks', key, { event_type: 'score_move', url: `https://127.0.0.1:${receiver.port}/in` });
    expect(hook.status).to.equal(201);
    const secret = hook.body['secret'] as string;
    expect((await api(`/v1/webhooks/${hook.body['id']}/test`, key, {})).body['ok']).to.equal(true);
    await server.stop();
    server = await start(LATER);
    s = server.services;
    expect((await api('/v1/scores/AAPL', key)).status).to.equal(200);
    const { invoice } = await issueInvoice(s, account, '2024-04');
    await s.runner.waitForHead();
    const shown = await b.request(`/account/invoices/${invoice.number}.json`);
    expect(shown.status, shown.text).to.equal(200);
    expect(JSON.parse(shown.text)).to.include({ email: EMAIL });
    expect(foundIn(dir, [EMAIL]).some((f) => f.includes('outbox')), 'the mails are kept in the outbox').to.equal(true);
    const credits = await figures(s, account);

    // The owner deletes the account from its page: the address typed wrong is refused, nothing done.
    const confirm = await b.request('/account/delete');
    expect(confirm.status).to.equal(200);
    expect(confirm.text).to.include('This cannot be undone');
    const wrong = await b.submit(confirm.text, '/account/delete', { confirm: 'someone@example.com' });
    expect(wrong.status).to.equal(400);
    expect((await api('/v1/usage', key)).status).to.equal(200);
    const deleted = await b.submit(confirm.text, '/account/delete', { confirm: ` ${EMAIL.toUpperCase()} ` });
    expect(deleted.status, deleted.text).to.equal(200);
    expect(deleted.text).to.include('Your account is deleted');

    // The session is over, the key refused, the webhook deleted, the address no longer opens.
    expect((await b.request('/account')).status).to.equal(303);
    expect((await api('/v1/usage', key)).status).to.be.oneOf([401, 403]);
    expect((await listWebhooks(s.reads, account)).webhooks).to.deep.equal([]);
    const kept = await getInvoice(s.reads, account, invoice.number);
    expect(kept.invoice.email).to.be.a('string');
    expect(await s.personal.open(account, kept.invoice.email!, 'email')).to.equal(null);
    expect(await figures(s, account)).to.deep.equal(credits);

    // No file holds the address or the secret: the store, its WAL, the key store, the outbox.
    expect(foundIn(dir, [EMAIL, secret, secret.slice('whsec_'.length)])).to.deep.equal([]);

    // Forgetting again finishes nothing more and fails nothing (the CLI's retry after a crash).
    const again = await forgetAccount(s, account);
    expect(again).to.include({ account_id: account, already: true, keys_revoked: 0, mails_removed: 0 });
    await server.stop();

    const audit = await runCli(['audit', '--all', '--json'], testEnv(dir, LATER));
    expect(audit.code, audit.stderr).to.equal(0);
    expect(JSON.parse(audit.stdout)).to.include({ ok: true });

    // A replay after the forgetting rebuilds the same read models, and the same figures.
    const reopened = await openServices(loadConfig(testEnv(dir, LATER)));
    try {
      await reopened.runner.start();
      const live = await snapshotReadModels(reopened);
      await reopened.runner.replay();
      expect(await snapshotReadModels(reopened)).to.deep.equal(live);
      expect(await figures(reopened, account)).to.deep.equal(credits);
    } finally {
      await reopened.close();
    }
    expect(foundIn(dir, [EMAIL, secret.slice('whsec_'.length)])).to.deep.equal([]);

    // The address is free again: its next sign-in opens a new, empty account.
    server = await start(LATER);
    const fresh = await signIn(EMAIL);
    expect(fresh.key).to.match(/^sk_live_/);
    expect(fresh.account).to.match(/^acct_/).and.not.equal(account);
  });

  it('is refused by the CLI without --yes, and forgets with it', async () => {
    const cli = testEnv(tempDir(), NOW, { SCORES_DEMO: 'off' });
    try {
      const made = await runCli(['keys', 'create', '--tier', 'free', '--email', 'cli.forget@example.com', '--json'], cli);
      const account = JSON.parse(made.stdout)['account_id'] as string;
      const unconfirmed = await runCli(['accounts', 'forget', account], cli);
      expect(unconfirmed.code).to.equal(2);
      expect(unconfirmed.stderr).to.match(/cannot be undone: run it again with --yes/);
      const done = await runCli(['accounts', 'forget', account, '--yes', '--json'], cli);
      expect(done.code, done.stderr).to.equal(0);
      expect(JSON.parse(done.stdout)).to.include({ account_id: account, keys_revoked: 1, already: false });
      expect(foundIn(cli['SCORES_DATA_DIR']!, ['cli.forget@example.com'])).to.deep.equal([]);
      const missing = await runCli(['accounts', 'forget', 'acct_none', '--yes'], cli);
      expect(missing.code).to.equal(1);
      expect(missing.stderr).to.match(/not_found/);
    } finally {
      rmSync(cli['SCORES_DATA_DIR']!, { recursive: true, force: true });
    }
  });
});

/**
 * The same on the engines: the log and the read models on PostgreSQL, the keys in their own schema;
 * a pg_dump of the whole database holds neither the address nor the secret after the forgetting.
 */
describe('Forgetting an account with the log and read models on PostgreSQL', function () {
  this.timeout(180_000);
  if (unsetEngines(['POSTGRES_URL']).length > 0) {
    it('runs when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)');
    return;
  }
  let sandbox: EnginesSandbox;
  before(async () => {
    sandbox = await openEnginesSandbox('forget', NOW, { extra: { SCORES_DEMO: 'off', WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' } });
  });
  after(() => sandbox?.drop());

  it('leaves no address or secret in a dump of the database, nor in the data directory', async () => {
    const services = await openServices(loadConfig(sandbox.env));
    const email = 'pg.forget@example.com';
    const logUrl = sandbox.vars['POSTGRES_URL']!;
    const dump = () => execFileSync('pg_dump', ['--data-only', logUrl], { maxBuffer: 256 * 1024 * 1024 }).toString('utf8');
    try {
      await services.runner.start();
      const { account_id: account } = await createAccountWithKey(services, { tier: 'quant', email });
      const hook = await registerWebhook({ ...services, allowSubnets: services.config.webhookAllowSubnets }, { accountId: account, eventType: 'score_move', url: 'https://127.0.0.1:9/in' });
      await sendSignInLink({ ...services, baseUrl: 'http://localhost' }, email);
      await services.runner.waitForHead();
      const before = dump();
      expect(before, 'the key store and the read models are in the dump').to.include('account_keys').and.include(account);
      expect(before).not.to.include(email);
      const credits = await figures(services, account);

      await forgetAccount(services, account);
      await services.runner.waitForHead();
      const after = dump();
      for (const needle of [email, hook.secret, hook.secret.slice('whsec_'.length)]) expect(after).not.to.include(needle);
      expect(foundIn(sandbox.dir, [email, hook.secret.slice('whsec_'.length)])).to.deep.equal([]);
      const db = await pgSession(logUrl);
      try {
        expect(await db.query('SELECT wrapped FROM scores_keys.account_keys WHERE account_id = $1', [account])).to.deep.equal([{ wrapped: null }]);
      } finally {
        await db.end();
      }
      expect(await figures(services, account)).to.deep.equal(credits);
    } finally {
      await services.close();
    }
  });
});
