/**
 * Issue 47, items 2 to 4, in a real browser (Debian's Chromium, headless): a customer registers a
 * webhook from the account page (the secret shown once, copied), tests it and sees the delivery;
 * a live delivery (a score move ingested) makes a webhook answering 410 deactivated, which is
 * enabled again and deleted; the receiver goes down, a live delivery fails, the receiver comes
 * back, the delivery is resent from the page and arrives once, under its original message id; a
 * month's usage and ledger lines download as CSV and say what `GET /v1/usage/ledger` says. One
 * server, one real HTTPS receiver; the tests run in order, as one customer's visit.
 */
import { expect } from 'chai';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import type { IngestRow } from '../../commands/ingest/ingest.schema.js';
import { webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { until } from '../support/processes.js';
import { startSwitchableReceiver, type ReceivedDelivery, type SwitchableReceiver } from '../support/receiver-certificate.js';
import { startTestServer, tempDir, type TestServer } from '../support/server.js';
import { signInByEmail } from '../support/browser-sign-in.js';

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const NOW = '2024-03-10T12:00:00Z';
const MONTH = '2024-03';
const EMAIL = 'hooks.customer@example.com';
/** Two passes of the dispatcher's look for due messages: what a second copy would need to arrive. */
const SETTLE_MS = 2_500;

let line = 0;
const listing = (symbol: string, rank: number): IngestRow => ({ kind: 'ticker', line: ++line, value: { symbol, company: `${symbol} Inc`, sector: 'Tech', size_rank: rank } });
const score = (ticker: string, date: string, main_street: number, wall_street: number): IngestRow => ({ kind: 'score', line: ++line, value: { ticker, date, main_street, wall_street, estimated: false } });

interface LedgerLine {
  seq: number;
  at: string;
  kind: string;
  request_id: string | null;
  cost: number | null;
  hash: string;
}

describe('Webhooks and usage downloads on the account page, in a real browser', function () {
  this.timeout(180_000);
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let server: TestServer;
  let receiver: SwitchableReceiver;
  const certDir = tempDir('scores-hooks-browser-cert-');
  const consoleErrors: string[] = [];
  let apiKey = '';
  let secret = '';
  let hookPath = '';

  const arrivals = (id: string) => receiver.received.filter((d) => d.headers['webhook-id'] === id);
  const ingest = (rows: IngestRow[]) => ingestRows(server.services.events, server.services.clock, rows);
  const api = (path: string) => fetch(`${server.url}${path}`, { headers: { 'X-API-Key': apiKey } });
  /** The rows of the deliveries table: each message's id, its attempts as written, and what is now. */
  const deliveryRows = async () =>
    Promise.all(
      (await page.locator('#deliveries tbody tr').all()).map(async (r) => ({
        id: (await r.getAttribute('data-message'))!,
        attempts: await r.locator('ol.attempts li').allInnerTexts(),
        now: await r.locator('td[data-label="Now"]').innerText(),
      })),
    );
  const verified = (d: ReceivedDelivery) => new Webhook(secret).verify(d.body, d.headers as Record<string, string>);

  /** Signs in by the emailed link, and keeps the key the welcome page shows. */
  async function signIn(): Promise<void> {
    await signInByEmail(page, server, EMAIL);
    apiKey = (await page.locator('#new-key').innerText()).trim();
  }

  /** Follows a GET form's button to its confirmation page, checks what it says, and confirms. */
  async function confirmStep(button: string | RegExp, consequence: RegExp, confirm: string | RegExp): Promise<void> {
    await page.getByRole('button', { name: button }).first().click();
    await page.locator('#consequence').waitFor();
    expect(await page.locator('#consequence').innerText()).to.match(consequence);
    const from = page.url();
    await Promise.all([page.waitForURL((u) => u.href !== from), page.getByRole('button', { name: confirm }).click()]);
  }

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.log(`      ${CHROMIUM} is absent: apt-get install -y chromium`);
      return this.skip();
    }
    receiver = await startSwitchableReceiver(certDir);
    receiver.answers['/gone'] = 410;
    server = await startTestServer({ now: NOW, env: { SCORES_DEMO: 'off', WEBHOOK_CA_FILE: receiver.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' } });
    await ingest([listing('AAA', 1), listing('BBB', 2), score('AAA', '2024-03-01', 50, 50), score('BBB', '2024-03-01', 50, 50)]);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => consoleErrors.push(`${page.url()}: ${e.message}`));
    await signIn();
    // Webhooks come with the quant plan: the upgrade, confirmed on its page.
    await page.goto(`${server.url}/account/plan?tier=quant`);
    await page.getByRole('button', { name: /^Confirm: pay .* and upgrade$/ }).click();
    await page.waitForURL(`${server.url}/account#plan`);
    expect(await page.locator('#plan-name').innerText()).to.equal('Quant');
  });

  after(async () => {
    await context?.close();
    await browser?.close();
    await server?.stop();
    await receiver?.close();
    rmSync(certDir, { recursive: true, force: true });
  });

  it('registers a webhook: confirmed, then its secret shown once with a Copy button that copies it', async () => {
    await page.goto(`${server.url}/account`);
    await page.getByRole('link', { name: 'Manage webhooks' }).click();
    await page.waitForURL(`${server.url}/account/webhooks`);
    await page.getByLabel(/Your endpoint/).fill(`https://localhost:${receiver.port}/hooks`);
    await page.getByLabel('Send it').selectOption('score_move');
    await confirmStep('Register…', new RegExp(`^You are about to register a webhook that sends score_move events .* to https://localhost:${receiver.port}/hooks\\.$`), 'Confirm: register the webhook');
    hookPath = new URL(page.url()).pathname;
    expect(hookPath).to.match(/^\/account\/webhooks\/\d+$/);
    secret = (await page.locator('#new-secret').innerText()).trim();
    expect(secret).to.match(/^whsec_/);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).to.equal(secret);
    // A reload is a GET: the form is not sent again, the secret not shown again.
    const reloaded = await page.reload();
    expect(reloaded?.status()).to.equal(200);
    expect(await page.locator('#new-secret').count()).to.equal(0);
    expect(await page.content()).not.to.include(secret);
  });

  it('sends a test from the page and lists the delivery, which the receiver verifies with the secret', async () => {
    await confirmStep('Send a test…', /^You are about to send one example score_move event, marked test, to webhook \d+ /, 'Confirm: send the test');
    expect(await page.locator('#notice').innerText()).to.match(/Test sent to .*, delivered: your endpoint answered 204\./);
    expect(receiver.received).to.have.length(1);
    const test = receiver.received[0]!;
    expect((verified(test) as { test: boolean }).test).to.equal(true);
    const rows = await deliveryRows();
    expect(rows).to.have.length(1);
    expect(rows[0]!.id).to.equal(test.headers['webhook-id']);
    expect(rows[0]!.attempts).to.have.length(1);
    expect(rows[0]!.attempts[0]).to.match(/: delivered \(204\)$/);
    expect(rows[0]!.now).to.equal('delivered');
  });

  it('sees a webhook deactivated by a 410 from a live delivery, enables it again, then deletes it', async () => {
    await page.goto(`${server.url}/account/webhooks`);
    await page.getByLabel(/Your endpoint/).fill(`https://localhost:${receiver.port}/gone`);
    await confirmStep('Register…', /to https:\/\/localhost:\d+\/gone\.$/, 'Confirm: register the webhook');
    const gonePath = new URL(page.url()).pathname;
    // A real event: a score move published by an ingest; both webhooks are sent it.
    await ingest([score('AAA', '2024-03-04', 70, 60), score('BBB', '2024-03-04', 51, 50)]);
    await until(() => receiver.received.some((d) => d.path === '/gone') && receiver.received.some((d) => d.path === '/hooks' && !JSON.parse(d.body).test), 10_000);
    await until(async () => {
      await page.goto(`${server.url}${gonePath}`);
      return (await page.locator('#hook-status').innerText()).startsWith('deactivated');
    }, 10_000, 200);
    await confirmStep('Enable…', /^You are about to make webhook \d+ .* active again\.$/, 'Confirm: enable the webhook');
    expect(await page.locator('#notice').innerText()).to.include('is active again');
    expect(await page.locator('#hook-status').innerText()).to.match(/^active/);
    await confirmStep('Delete…', /^You are about to delete webhook \d+ /, /^Confirm: delete webhook \d+$/);
    expect(new URL(page.url()).pathname).to.equal('/account/webhooks');
    expect(await page.locator('#notice').innerText()).to.match(/Webhook \d+ is deleted/);
    const listed = await page.getByRole('table', { name: 'Webhooks' }).locator('tbody tr').allInnerTexts();
    expect(listed).to.have.length(1);
    expect(listed[0]).to.include('/hooks');
  });

  it('resends a live delivery that failed while the receiver was down: it arrives once, under its original message id', async () => {
    await receiver.stop();
    const before = receiver.received.length;
    await ingest([score('AAA', '2024-03-05', 52, 50), score('BBB', '2024-03-05', 51, 50)]);
    // The first attempt fails at once, the second 5 s later; the third is 5 minutes away.
    let failed: { id: string; attempts: string[]; now: string } | undefined;
    await until(async () => {
      await page.goto(`${server.url}${hookPath}`);
      failed = (await deliveryRows()).find((r) => r.attempts.length === 2 && r.attempts.every((a) => a.includes(': failed')));
      return failed !== undefined;
    }, 20_000, 500);
    expect(failed!.now).to.match(/^owed: next attempt /);
    expect(receiver.received).to.have.length(before);

    await receiver.start();
    const row = page.locator(`#deliveries tr[data-message="${failed!.id}"]`);
    await row.getByRole('button', { name: /^Resend…/ }).click();
    await page.locator('#consequence').waitFor();
    expect(await page.locator('#consequence').innerText()).to.include(`send message ${failed!.id} again`);
    await page.getByRole('button', { name: 'Confirm: resend it' }).click();
    await page.waitForURL((u) => u.pathname === hookPath);
    expect(await page.locator('#notice').innerText()).to.include(`Resent: ${failed!.id} goes again within seconds`);
    await until(() => arrivals(failed!.id).length > 0, 10_000);
    const resent = arrivals(failed!.id)[0]!;
    // The original id, the live envelope, signed now (the reference verifier judges the timestamp).
    const envelope = verified(resent) as { test: boolean; events: { ticker: string; date: string }[] };
    expect(envelope.test).to.equal(false);
    expect(envelope.events.map((e) => [e.ticker, e.date])).to.deep.equal([['AAA', '2024-03-05']]);

    await new Promise((r) => setTimeout(r, SETTLE_MS));
    expect(arrivals(failed!.id), 'arrived once').to.have.length(1);
    await page.goto(`${server.url}${hookPath}`);
    const after = (await deliveryRows()).find((r) => r.id === failed!.id)!;
    expect(after.attempts).to.have.length(3);
    expect(after.attempts[0]).to.match(/: delivered \(204\)$/);
    expect(after.now).to.equal('delivered');
  });

  it('resends once when the resend form is sent twice (a double submit, a replayed POST): one decision, one arrival', async () => {
    const id = (await deliveryRows())[0]!.id;
    const count = arrivals(id).length;
    await page.locator(`#deliveries tr[data-message="${id}"]`).getByRole('button', { name: /^Resend…/ }).click();
    await page.locator('#consequence').waitFor();
    const field = async (name: string) => (await page.locator(`form.confirm input[name="${name}"]`).getAttribute('value'))!;
    const form = { _csrf: await field('_csrf'), request: await field('request') };
    const action = (await page.locator('form.confirm').getAttribute('action'))!;
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const send = () => fetch(`${server.url}${action}`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
    const [first, second] = [await send(), await send()];
    expect([first.status, second.status]).to.deep.equal([303, 303]);
    await until(() => arrivals(id).length > count, 10_000);
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    expect(arrivals(id)).to.have.length(count + 1);
    const decided = (await server.services.events.readStream(webhookStream(Number(hookPath.split('/').at(-1))))).filter((e) => e.type === 'WebhookMessagesResent' && (e.data as { request: string }).request === form.request);
    expect(decided).to.have.length(1);
  });

  it('refuses every webhook form without its CSRF token, and changes nothing', async () => {
    const id = Number(hookPath.split('/').at(-1));
    await page.goto(`${server.url}${hookPath}`);
    const message = (await deliveryRows())[0]!.id;
    const before = (await server.services.events.readStream(webhookStream(id))).length;
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const forms: [string, Record<string, string>][] = [
      ['/account/webhooks', { url: `https://localhost:${receiver.port}/csrf`, event_type: 'score_move' }],
      [`${hookPath}/test`, {}],
      [`${hookPath}/enable`, {}],
      [`${hookPath}/rotate-secret`, { overlap_hours: '0' }],
      [`${hookPath}/deliveries/${message}/resend`, { request: 'csrf-1' }],
      [`${hookPath}/resend-failed`, { since: '2024-03-01T00:00:00Z', request: 'csrf-2' }],
      [`${hookPath}/delete`, {}],
    ];
    for (const [path, fields] of forms) {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
      const text = await res.text();
      expect(res.status, `${path}: ${text.slice(0, 200)}`).to.equal(403);
      expect(text, path).to.include('<code>csrf</code>');
    }
    expect((await server.services.events.readStream(webhookStream(id))).length).to.equal(before);
    const listed = await (await api('/v1/webhooks')).json();
    expect((listed as { webhooks: unknown[] }).webhooks).to.have.length(1);
  });

  it("downloads a month's daily usage and ledger lines as CSV, each equal to GET /v1/usage/ledger", async () => {
    for (const ticker of ['AAA', 'BBB', 'AAA']) expect((await api(`/v1/scores/${ticker}`)).status).to.equal(200);
    const ledger: LedgerLine[] = [];
    for (let cursor: string | null = null; ; ) {
      const res = await api(`/v1/usage/ledger?month=${MONTH}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      const body = (await res.json()) as { entries: LedgerLine[]; next_cursor: string | null };
      ledger.push(...body.entries);
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(ledger.filter((l) => l.kind === 'CreditsDebited').length).to.be.at.least(3);

    await page.goto(`${server.url}/account#books`);
    await page.getByLabel('Month', { exact: true }).selectOption(MONTH);
    const download = async (name: string) => {
      const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name }).click()]);
      return { name: file.suggestedFilename(), rows: parse<Record<string, string>>(readFileSync(await file.path(), 'utf8'), { columns: true }) };
    };
    const days = await download('Download daily usage (CSV)');
    expect(days.name).to.equal(`scores-usage-days-${MONTH}.csv`);
    const lines = await download('Download ledger lines (CSV)');
    expect(lines.name).to.equal(`scores-ledger-${MONTH}.csv`);

    // The ledger file: the API's lines, oldest first, field for field.
    expect(lines.rows.map((r) => [Number(r['seq']), r['at'], r['kind'], r['request_id'] || null, r['cost'] === '' ? null : Number(r['cost']), r['hash']])).to.deep.equal(
      [...ledger].reverse().map((l) => [l.seq, l.at, l.kind, l.request_id, l.cost, l.hash]),
    );
    // The daily file: the charged calls of the ledger, counted and summed per UTC day.
    const perDay = new Map<string, { calls: number; credits: number }>();
    for (const l of ledger.filter((x) => x.kind === 'CreditsDebited' && x.cost !== null)) {
      const d = perDay.get(l.at.slice(0, 10)) ?? { calls: 0, credits: 0 };
      perDay.set(l.at.slice(0, 10), { calls: d.calls + 1, credits: d.credits + l.cost! });
    }
    expect(days.rows.map((r) => [r['day'], Number(r['calls']), Number(r['credits'])])).to.deep.equal([...perDay].sort().map(([day, d]) => [day, d.calls, d.credits]));
    // The invoices' PDFs are linked beside the downloads (none yet: the month has not closed).
    expect(await page.locator('#books').innerText()).to.include('Invoices: none yet.');
  });

  it('logged no console error on the pages visited', () => {
    expect(consoleErrors).to.deep.equal([]);
  });
});
