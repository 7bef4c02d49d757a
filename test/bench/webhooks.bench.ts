import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import type { IngestRow } from '../../commands/ingest/ingest.schema.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { registerWebhook } from '../../commands/manage-webhooks/webhooks.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { startServer } from '../../src/app/server.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, info, median, report } from './stats.js';
import { receiverCertificate } from '../support/receiver-certificate.js';

const NOW = '2024-03-10T12:00:00Z';
const WEBHOOKS = 1_000;
/** An account holds at most 10 webhooks. */
const PER_ACCOUNT = 10;
const TICKERS = ['AAA', 'BBB', 'CCC'];

let line = 0;
const listing = (symbol: string, rank: number): IngestRow => ({ kind: 'ticker', line: ++line, value: { symbol, company: `${symbol} Inc`, sector: 'Tech', size_rank: rank } });
const score = (ticker: string, date: string, main_street: number, wall_street: number): IngestRow => ({
  kind: 'score',
  line: ++line,
  value: { ticker, date, main_street, wall_street, estimated: false },
});

/** A local HTTPS receiver: counts the POSTs per path and notes when each answer was sent. */
class Receiver {
  readonly counts = new Map<string, number>();
  readonly messageIds = new Set<string>();
  received = 0;
  firstAckAt = 0;
  lastAckAt = 0;
  private readonly server: Server;
  constructor(key: string, cert: string) {
    this.server = createServer({ key, cert }, (req, res) => {
      req.resume();
      req.on('end', () => {
        this.counts.set(req.url ?? '', (this.counts.get(req.url ?? '') ?? 0) + 1);
        this.messageIds.add(String(req.headers['webhook-id']));
        res.on('finish', () => {
          this.received++;
          this.lastAckAt = performance.now();
          if (this.received === 1) this.firstAckAt = this.lastAckAt;
        });
        res.writeHead(204).end();
      });
    });
  }
  async listen(): Promise<number> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    return (this.server.address() as AddressInfo).port;
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/**
 * Webhook fan-out: 1,000 active `score_move` webhooks (100 quant accounts, 10 each) on one local
 * HTTPS receiver (a self-signed certificate trusted through WEBHOOK_CA_FILE, 127.0.0.0/8 allowed),
 * a store with the tickers listed and a prior day of scores, and the real server (`startServer`,
 * its webhook dispatcher with its default concurrency) running. One publication day is appended
 * (`ingestRows`, one ticker moving by 10+): the time from the append to the last delivery the
 * receiver answered, and deliveries per second over it. Every webhook must get exactly one.
 */
export async function benchWebhooks(runs: number): Promise<void> {
  const seconds: number[] = [];
  const firsts: number[] = [];
  const rates: number[] = [];
  let allExact = true;
  for (let run = 0; run < runs; run++) {
    const dir = tempDir('scores-bench-webhooks-');
    const pems = await receiverCertificate(dir);
    const receiver = new Receiver(pems.key, pems.cert);
    const port = await receiver.listen();
    const env = testEnv(dir, NOW, { SCORES_DEMO: 'off', WEBHOOK_CA_FILE: pems.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' });
    const services = await openServices(loadConfig(env));
    const running = await startServer(services, { progress: false, port: 0 });
    try {
      const s = services;
      const ingest = async (rows: IngestRow[]) => {
        const r = await ingestRows(s.events, s.clock, rows);
        if (r.position) await s.runner.waitFor(r.position);
      };
      await ingest([...TICKERS.map((t, i) => listing(t, i + 1)), ...TICKERS.map((t) => score(t, '2024-03-07', 50, 50))]);

      const paths: string[] = [];
      for (let a = 0; a < WEBHOOKS / PER_ACCOUNT; a++) {
        const { account_id } = await createAccountWithKey(s, { tier: 'quant' });
        for (let i = 0; i < PER_ACCOUNT; i++) {
          const path = `/hooks/${account_id}/${i}`;
          await registerWebhook(
            { events: s.events, clock: s.clock, ids: s.ids, personal: s.personal, allowSubnets: s.config.webhookAllowSubnets },
            { accountId: account_id, eventType: 'score_move', url: `https://localhost:${port}${path}` },
          );
          paths.push(path);
        }
      }
      // The dispatcher decides on batches the read models hold: let it see the registrations.
      await s.runner.waitForHead();

      // AAA moves by 15+; BBB by less than 10; CCC not at all.
      const t0 = performance.now();
      await ingestRows(s.events, s.clock, [score('AAA', '2024-03-08', 70, 60), score('BBB', '2024-03-08', 52, 50), score('CCC', '2024-03-08', 50, 50)]);
      const deadline = Date.now() + 30_000;
      while (receiver.received < WEBHOOKS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      const elapsed = (receiver.lastAckAt - t0) / 1000;
      // Anything more (a second delivery) would come within a moment.
      await new Promise((r) => setTimeout(r, 500));
      const missing = paths.filter((p) => receiver.counts.get(p) === undefined).length;
      const twice = paths.filter((p) => (receiver.counts.get(p) ?? 0) > 1).length;
      const exact = missing === 0 && twice === 0 && receiver.received === WEBHOOKS && receiver.messageIds.size === WEBHOOKS;
      if (!exact) {
        allExact = false;
        report(`webhook deliveries, run ${run + 1}`, `${receiver.received} received`, `${WEBHOOKS}, exactly one each`, false);
        info(`  missing / delivered more than once`, `${missing} / ${twice}`, `${receiver.messageIds.size} distinct webhook-ids`);
      }
      if (receiver.received >= WEBHOOKS) {
        seconds.push(elapsed);
        firsts.push((receiver.firstAckAt - t0) / 1000);
        rates.push(WEBHOOKS / elapsed);
      }
    } finally {
      await running.shutdown();
      await receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (seconds.length === 0) {
    report(`webhook fan-out, ${fmt(WEBHOOKS, 0)} deliveries`, 'not all delivered in 30 s', '< 10 s', false);
    return;
  }
  const t = median(seconds);
  report(`webhook fan-out, append to last ack (median of ${seconds.length})`, `${fmt(t, 2)} s for ${fmt(WEBHOOKS, 0)}`, '< 10 s', t < 10);
  info(`webhook fan-out, append to first ack (median)`, `${fmt(median(firsts), 2)} s`, '(decision and queueing before the first send)');
  info(`webhook deliveries/s (median of ${rates.length})`, `${fmt(median(rates), 0)}/s`, `HTTPS, one receiver, runs: ${seconds.map((x) => fmt(x, 2)).join(', ')} s`);
  report(`every webhook got exactly one delivery (${runs} runs)`, allExact ? `${fmt(WEBHOOKS, 0)} x 1` : 'no', 'exactly one each', allExact);
}
