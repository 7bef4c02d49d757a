import { expect } from 'chai';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import type { WebhookEnvelope } from '../../src/domain/webhooks/webhook-envelope.js';
import { runCli, until } from '../support/processes.js';
import { getJson, startTestServer, tempDir, testEnv, type TestServer } from '../support/server.js';
import { receiverCertificate } from '../support/receiver-certificate.js';

const WEEK_MS = 7 * 86_400_000;

/**
 * A score move ingested by `scores ingest` (another process) reaches a real HTTPS receiver of the
 * running server, signed so that the Standard Webhooks library verifies it with its default
 * tolerance (5 minutes from the receiver's clock). The service's data clock is pinned a week back
 * (`SCORES_NOW`, the demo set-up): the signature's time is transport time, the real sending
 * instant, whatever the data clock says and however long the suite took to get here.
 */
describe('Live webhook delivery end to end, SCORES_NOW a week back', function () {
  this.timeout(120_000);
  /** The pinned data clock, taken when the tests run. */
  let now: string;
  let dir: string;
  let server: TestServer;
  let receiver: Server;
  let port: number;
  const received: { headers: IncomingHttpHeaders; body: string; at: number }[] = [];
  let env: NodeJS.ProcessEnv;

  before(async () => {
    now = new Date(Date.now() - WEEK_MS).toISOString();
    dir = tempDir('scores-live-webhook-');
    const pems = await receiverCertificate(dir);
    receiver = createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
        res.writeHead(204).end();
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    port = (receiver.address() as AddressInfo).port;
    const extra = { SCORES_DEMO: 'off', WEBHOOK_CA_FILE: pems.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' };
    env = testEnv(dir, now, extra);
    server = await startTestServer({ now, dir, env: extra });
  });
  after(async () => {
    await server?.stop();
    receiver?.close();
  });

  it('delivers a score move ingested by the CLI within 2 s, verifiable with standardwebhooks, and lists it in /deliveries', async () => {
    const s = server.services;
    const { key } = await createAccountWithKey({ events: s.events, clock: s.clock, ids: s.ids, personal: s.personal }, { tier: 'quant' });
    await s.runner.waitForHead();
    const registered = await fetch(`${server.url}/v1/webhooks`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ event_type: 'score_move', url: `https://localhost:${port}/hooks/scores` }),
    });
    expect(registered.status).to.equal(201);
    const hook = (await registered.json()) as { id: number; secret: string };
    const tickers = join(dir, 'tickers.csv');
    writeFileSync(tickers, ['symbol,company,sector,size_rank', 'AAA,AAA Inc,Tech,1', 'BBB,BBB Inc,Tech,2'].join('\n'));
    const day1 = join(dir, 'day1.csv');
    writeFileSync(day1, ['ticker,date,main_street,wall_street', 'AAA,2024-03-01,50,50', 'BBB,2024-03-01,50,50'].join('\n'));
    const day2 = join(dir, 'day2.csv');
    writeFileSync(day2, ['ticker,date,main_street,wall_street', 'AAA,2024-03-04,70,60', 'BBB,2024-03-04,51,50'].join('\n'));
    for (const file of [tickers, day1]) expect((await runCli(['ingest', file], env)).code).to.equal(0);

    const exit = await runCli(['ingest', day2], env);
    const ingestedAt = Date.now();
    expect(exit.code, exit.stderr).to.equal(0);
    await until(() => received.length > 0, 2_000);
    expect(received[0]!.at - ingestedAt).to.be.below(2_000);

    // The library's default tolerance, against this machine's real clock.
    const envelope = new Webhook(hook.secret).verify(received[0]!.body, received[0]!.headers as Record<string, string>) as WebhookEnvelope;
    expect(envelope.events.map((e) => [e.type, e.ticker, e.date])).to.deep.equal([['score_move', 'AAA', '2024-03-04']]);
    expectSendingInstant(received[0]!, envelope);
    await new Promise((r) => setTimeout(r, 500));
    expect(received).to.have.length(1);

    let deliveries: Record<string, any>[] = [];
    await until(async () => {
      deliveries = (await getJson(`${server.url}/v1/webhooks/${hook.id}/deliveries`, key)).body['deliveries'] as Record<string, any>[];
      return deliveries.length > 0;
    }, 2_000);
    expect(deliveries[0]).to.include({ kind: 'live', event_type: 'score_move', event_count: 1, ok: true, status_code: 204, error: null });
  });

  it('signs a test delivery at the sending instant too, verifiable with the default tolerance', async () => {
    const s = server.services;
    const { key } = await createAccountWithKey({ events: s.events, clock: s.clock, ids: s.ids, personal: s.personal }, { tier: 'quant' });
    await s.runner.waitForHead();
    const registered = await fetch(`${server.url}/v1/webhooks`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ event_type: 'divergence_event', url: `https://localhost:${port}/hooks/test` }),
    });
    expect(registered.status).to.equal(201);
    const hook = (await registered.json()) as { id: number; secret: string };
    const before = received.length;
    const answer = await fetch(`${server.url}/v1/webhooks/${hook.id}/test`, { method: 'POST', headers: { 'X-API-Key': key } });
    expect(answer.status).to.equal(200);
    expect(received).to.have.length(before + 1);
    const got = received[before]!;
    const envelope = new Webhook(hook.secret).verify(got.body, got.headers as Record<string, string>) as WebhookEnvelope;
    expect(envelope).to.include({ test: true });
    expectSendingInstant(got, envelope);
  });

  /** `webhook-timestamp` and `sent_at` are the real sending instant, not the pinned data clock. */
  function expectSendingInstant(got: { headers: IncomingHttpHeaders; at: number }, envelope: WebhookEnvelope): void {
    const stamp = Number(got.headers['webhook-timestamp']) * 1000;
    expect(got.at - stamp, 'webhook-timestamp: seconds before the arrival').to.be.within(0, 60_000);
    expect(got.at - Date.parse(envelope.sent_at), 'sent_at: before the arrival, by seconds').to.be.within(0, 60_000);
    expect(Date.parse(now), 'the data clock is a week back').to.be.below(stamp - WEEK_MS + 60_000);
  }
});
