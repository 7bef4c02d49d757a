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

/**
 * A score move ingested by `scores ingest` (another process) reaches a real HTTPS receiver of the
 * running server, signed so that the Standard Webhooks library verifies it.
 */
describe('Live webhook delivery end to end', function () {
  this.timeout(120_000);
  // The receiver checks the signature's time against its own clock: pin the service to now.
  const now = new Date().toISOString();
  let dir: string;
  let server: TestServer;
  let receiver: Server;
  let port: number;
  const received: { headers: IncomingHttpHeaders; body: string; at: number }[] = [];
  let env: NodeJS.ProcessEnv;

  before(async () => {
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
    const { key } = await createAccountWithKey({ events: s.events, clock: s.clock, ids: s.ids }, { tier: 'quant' });
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

    const envelope = new Webhook(hook.secret).verify(received[0]!.body, received[0]!.headers as Record<string, string>) as WebhookEnvelope;
    expect(envelope.events.map((e) => [e.type, e.ticker, e.date])).to.deep.equal([['score_move', 'AAA', '2024-03-04']]);
    await new Promise((r) => setTimeout(r, 500));
    expect(received).to.have.length(1);

    let deliveries: Record<string, any>[] = [];
    await until(async () => {
      deliveries = (await getJson(`${server.url}/v1/webhooks/${hook.id}/deliveries`, key)).body['deliveries'] as Record<string, any>[];
      return deliveries.length > 0;
    }, 2_000);
    expect(deliveries[0]).to.include({ kind: 'live', event_type: 'score_move', event_count: 1, ok: true, status_code: 204, error: null });
  });
});
