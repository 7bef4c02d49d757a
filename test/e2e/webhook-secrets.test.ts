import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { FormBrowser, linksTo } from '../support/form-browser.js';
import { startHttpsReceiver, type HttpsReceiver, type ReceivedDelivery } from '../support/receiver-certificate.js';
import { readDemoKeys } from '../../src/app/demo-keys.js';
import { runCli } from '../support/processes.js';
import { everyFile } from '../support/data-files.js';
import { demoKey, startTestServer, tempDir, testEnv, wallClockPlus, type TestServer } from '../support/server.js';

const HOUR = 3_600_000;

/**
 * Whether `secret` verifies the delivery, by each scheme: Standard Webhooks (one of the
 * space-separated `v1,` signatures; the timestamp is not judged, as the test moves the wall
 * clock), `X-Service-Signature`, and `X-Service-Signature-Previous`.
 */
function verifies(secret: string, d: ReceivedDelivery): { standard: boolean; hex: boolean; hexPrevious: boolean } {
  const h = d.headers as Record<string, string>;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = `v1,${createHmac('sha256', key).update(`${h['webhook-id']}.${h['webhook-timestamp']}.${d.body}`).digest('base64')}`;
  const hex = createHmac('sha256', secret).update(d.body).digest('hex');
  return { standard: h['webhook-signature']!.split(' ').includes(expected), hex: h['x-service-signature'] === hex, hexPrevious: h['x-service-signature-previous'] === hex };
}

/** The reference verifier (which also judges the timestamp against this machine's clock). */
function referenceVerifies(secret: string, d: ReceivedDelivery): boolean {
  const h = d.headers as Record<string, string>;
  try {
    new Webhook(secret).verify(d.body, { 'webhook-id': h['webhook-id']!, 'webhook-timestamp': h['webhook-timestamp']!, 'webhook-signature': h['webhook-signature']! });
    return true;
  } catch {
    return false;
  }
}

/**
 * Issue 42, item 2: webhook secrets are sealed at rest (AES-256-GCM under the data key), and a
 * webhook's owner rotates its secret with an overlap during which deliveries carry both
 * signatures. Real HTTP, a real HTTPS receiver, the standardwebhooks reference verifier.
 */
describe('Webhook secrets at rest and their rotation', function () {
  this.timeout(120_000);
  let server: TestServer;
  let receiver: HttpsReceiver;
  let certDir: string;
  let quant: string;
  const wall = wallClockPlus();

  before(async () => {
    certDir = tempDir('scores-secrets-cert-');
    receiver = await startHttpsReceiver(certDir);
    server = await startTestServer({
      now: '2019-06-14T12:00:00Z',
      transportClock: wall,
      env: { WEBHOOK_CA_FILE: receiver.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' },
    });
    quant = demoKey(server.dir, 'quant');
  });

  after(async () => {
    await server?.stop();
    await receiver?.close();
    rmSync(certDir, { recursive: true, force: true });
    rmSync(server.dir, { recursive: true, force: true });
  });

  const post = async (path: string, json: unknown, key = quant) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify(json) });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  const testDelivery = async (id: number, key = quant): Promise<ReceivedDelivery> => {
    const before = receiver.received.length;
    const sent = await post(`/v1/webhooks/${id}/test`, {}, key);
    expect(sent.status).to.equal(200);
    expect(sent.body['ok'], JSON.stringify(sent.body)).to.equal(true);
    expect(receiver.received.length).to.equal(before + 1);
    return receiver.received[before]!;
  };

  it('writes no secret in clear: no whsec_ anywhere in the data directory after registering and rotating', async () => {
    const made = await post('/v1/webhooks', { event_type: 'score_move', url: `https://127.0.0.1:${receiver.port}/in` });
    expect(made.status).to.equal(201);
    const rotated = await post(`/v1/webhooks/${made.body['id']}/rotate-secret`, {});
    expect(rotated.status).to.equal(200);
    const secrets = [made.body['secret'] as string, rotated.body['secret'] as string];
    for (const s of secrets) expect(s).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
    // Both secrets sign (the delivery opens them from the log), yet no file holds them.
    const d = await testDelivery(made.body['id'] as number);
    expect(referenceVerifies(secrets[1]!, d)).to.equal(true);

    const files = everyFile(server.dir);
    expect(files.map((f) => f.path).some((p) => p.endsWith('scores.sqlite')), 'the store was read').to.equal(true);
    for (const { path, bytes } of files) {
      expect(bytes.includes('whsec_'), `whsec_ in ${path}`).to.equal(false);
      for (const s of secrets) expect(bytes.includes(s.slice(6)), `a secret's base64 in ${path}`).to.equal(false);
    }
  });

  it('signs with the old and the new secret during the overlap, and with the new one only after it', async () => {
    const made = await post('/v1/webhooks', { event_type: 'divergence_event', url: `https://127.0.0.1:${receiver.port}/rotating` });
    const id = made.body['id'] as number;
    const oldSecret = made.body['secret'] as string;
    const before = await testDelivery(id);
    expect(verifies(oldSecret, before)).to.deep.equal({ standard: true, hex: true, hexPrevious: false });
    expect(before.headers['x-service-signature-previous']).to.equal(undefined);

    const rotated = await post(`/v1/webhooks/${id}/rotate-secret`, { overlap_hours: 2 });
    expect(rotated.status).to.equal(200);
    const newSecret = rotated.body['secret'] as string;
    expect(newSecret).not.to.equal(oldSecret);
    const until = rotated.body['previous_secret_expires_at'] as string;
    expect(until).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(Date.parse(`${until.replace(' ', 'T')}Z`) - wall.now().getTime()).to.be.within(2 * HOUR - 61_000, 2 * HOUR);

    // The overlap: a receiver still on the old secret and one already on the new both verify.
    const during = await testDelivery(id);
    expect(String(during.headers['webhook-signature']).split(' ')).to.have.length(2);
    expect(verifies(newSecret, during)).to.deep.equal({ standard: true, hex: true, hexPrevious: false });
    expect(verifies(oldSecret, during)).to.deep.equal({ standard: true, hex: false, hexPrevious: true });
    expect([referenceVerifies(oldSecret, during), referenceVerifies(newSecret, during)], 'standardwebhooks, old and new').to.deep.equal([true, true]);

    // After it (by the wall clock, which signs deliveries): the old secret verifies nothing.
    wall.advance(2 * HOUR + 1_000);
    const after = await testDelivery(id);
    expect(verifies(newSecret, after)).to.deep.equal({ standard: true, hex: true, hexPrevious: false });
    expect(verifies(oldSecret, after)).to.deep.equal({ standard: false, hex: false, hexPrevious: false });
  });

  it('refuses another account\'s webhook (404) and an overlap over a week (400), changing nothing', async () => {
    const made = await post('/v1/webhooks', { event_type: 'score_move', url: `https://127.0.0.1:${receiver.port}/mine` });
    const id = made.body['id'] as number;
    const theirs = await fetch(`${server.url}/v1/webhooks/${id}/rotate-secret`, { method: 'POST', headers: { 'X-API-Key': demoKey(server.dir, 'enterprise') } });
    expect(theirs.status).to.equal(404);
    expect(((await theirs.json()) as { code: string }).code).to.equal('not_found');
    const tooLong = await post(`/v1/webhooks/${id}/rotate-secret`, { overlap_hours: 169 });
    expect(tooLong.status).to.equal(400);
    expect(verifies(made.body['secret'] as string, await testDelivery(id))).to.deep.equal({ standard: true, hex: true, hexPrevious: false });
  });

  it('rotates from the account page: the new secret shown once, the old one signing during the overlap chosen', async () => {
    const email = 'hooks.owner@example.com';
    const owner = await createAccountWithKey(server.services, { tier: 'quant', email });
    await server.services.runner.waitForHead(); // its key known to the API
    const made = await post('/v1/webhooks', { event_type: 'score_move', url: `https://127.0.0.1:${receiver.port}/page` }, owner.key);
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    const id = made.body['id'] as number;
    const browser = new FormBrowser(() => server.url, '10.78.0.1');
    await browser.submit((await browser.request('/account/sign-in')).text, '/account/sign-in', { email });
    const [token] = linksTo(server.dir, email);
    await browser.submit((await browser.request(`/account/sign-in/${token}`)).text, `/account/sign-in/${token}`);

    const page = await browser.request(`/account/webhooks/${id}`);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('Rotate the secret');
    // The page's form leads to the confirmation step, whose form rotates.
    const confirm = await browser.request(`/account/webhooks/${id}/rotate-secret?overlap_hours=24`);
    expect(confirm.status).to.equal(200);
    const refused = await browser.submit(confirm.text, `/account/webhooks/${id}/rotate-secret`, { overlap_hours: '5' });
    expect(refused.status, `an overlap the page does not offer: ${refused.text.replace(/<[^>]*>/g, ' ').slice(0, 1500)}`).to.equal(400);
    const answered = await browser.submit(confirm.text, `/account/webhooks/${id}/rotate-secret`, { overlap_hours: '24' });
    expect(answered.status, answered.text.slice(0, 300)).to.equal(303);
    const shown = /id="new-secret">([^<]+)</.exec((await browser.request(answered.headers.get('location')!)).text)?.[1];
    expect(shown).to.match(/^whsec_/);
    expect((await browser.request(`/account/webhooks/${id}`)).text, 'shown once').not.to.include(shown!);

    const during = await testDelivery(id, owner.key);
    expect(verifies(shown!, during)).to.deep.equal({ standard: true, hex: true, hexPrevious: false });
    expect(verifies(made.body['secret'] as string, during)).to.deep.equal({ standard: true, hex: false, hexPrevious: true });
  });

  it('rotates from the CLI (scores webhooks rotate-secret), and rotates the data key (scores secrets rotate-key) keeping the old one', async () => {
    const made = await post('/v1/webhooks', { event_type: 'score_move', url: `https://127.0.0.1:${receiver.port}/cli` });
    const id = made.body['id'] as number;
    const account = readDemoKeys(server.dir).find((k) => k.tier === 'quant')!.account_id;
    const env = testEnv(server.dir, '2019-06-14T12:00:00Z');
    // 24 h: the server's wall clock runs 2 h ahead of this one since the overlap test.
    const run = await runCli(['webhooks', 'rotate-secret', '--account', account, '--webhook', String(id), '--overlap-hours', '24', '--json'], env);
    expect(run.code, run.stderr).to.equal(0);
    const rotated = JSON.parse(run.stdout) as { id: number; secret: string; previous_secret_expires_at: string };
    expect(rotated.id).to.equal(id);
    const during = await testDelivery(id);
    expect(verifies(rotated.secret, during).hex).to.equal(true);
    expect(verifies(made.body['secret'] as string, during).hexPrevious).to.equal(true);
    const theirs = await runCli(['webhooks', 'rotate-secret', '--account', 'acct_nobody', '--webhook', String(id), '--json'], env);
    expect(theirs.code).not.to.equal(0);
    expect(JSON.parse(theirs.stderr).code).to.equal('not_found');

    const keyFile = () => JSON.parse(readFileSync(join(server.dir, 'data-encryption-keys.json'), 'utf8')) as { current: { key: string }; retired: { key: string }[] };
    const before = keyFile().current.key;
    const keys = await runCli(['secrets', 'rotate-key', '--json'], env);
    expect(keys.code, keys.stderr).to.equal(0);
    expect(keyFile().current.key).not.to.equal(before);
    expect(keyFile().retired.map((k) => k.key)).to.include(before);
  });
});
