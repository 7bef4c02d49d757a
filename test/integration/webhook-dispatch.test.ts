import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { DrainReceipts, startWebhookDispatcher, WEBHOOK_DELIVER_TOPIC, webhookDispatchCheckpoint, type WebhookDispatcher } from '../../commands/deliver-webhooks/webhook-dispatch.reactor.js';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import type { IngestRow } from '../../commands/ingest/ingest.schema.js';
import { deliverMessage, queueMessage } from '../../commands/deliver-webhooks/webhook-delivery.handler.js';
import { deleteWebhook, registerWebhook } from '../../commands/manage-webhooks/webhooks.handler.js';
import { webhooks } from '../../projections/webhooks/webhooks.projection.js';
import { InMemoryEventBus } from '../../infra/memory/event-bus.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { fixedClock } from '../../src/core/clock.js';
import type { DeliveryResult, WebhookRequest, WebhookSender } from '../../src/core/webhook-sender.port.js';
import { compositeScore, round1 } from '../../src/domain/composite.js';
import { liveEnvelope, scoreMoveEvent, type WebhookEnvelope } from '../../src/domain/webhooks/webhook-envelope.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2024-03-10T12:00:00.000Z';

/** The port, faked: keeps every request per URL; answers 204 unless told otherwise for a URL. */
class FakeSender implements WebhookSender {
  readonly received = new Map<string, WebhookRequest[]>();
  readonly answers = new Map<string, Partial<DeliveryResult>[]>();
  delayMs = 0;
  inFlight = 0;
  maxInFlight = 0;
  async refusal(): Promise<string | null> {
    return null;
  }
  async send(request: WebhookRequest): Promise<DeliveryResult> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
      const list = this.received.get(request.url) ?? [];
      list.push(request);
      this.received.set(request.url, list);
      const a = this.answers.get(request.url)?.shift() ?? {};
      return { ok: a.ok ?? true, status_code: a.status_code === undefined ? 204 : a.status_code, error: a.error ?? null, delivered_to: '203.0.113.7' };
    } finally {
      this.inFlight--;
    }
  }
  to(url: string): WebhookRequest[] {
    return this.received.get(url) ?? [];
  }
  total(): number {
    let n = 0;
    for (const l of this.received.values()) n += l.length;
    return n;
  }
}

const body = (r: WebhookRequest) => JSON.parse(r.body) as WebhookEnvelope;

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

let line = 0;
const listing = (symbol: string): IngestRow => ({ kind: 'ticker', line: ++line, value: { symbol, company: `${symbol} Inc`, sector: 'Tech', size_rank: line } });
const score = (ticker: string, date: string, main_street: number, wall_street: number): IngestRow => ({
  kind: 'score',
  line: ++line,
  value: { ticker, date, main_street, wall_street, estimated: false },
});

describe('Live webhook deliveries over the SQLite store and the projector runner', function () {
  this.timeout(60_000);
  let dir: string;
  let services: Services;
  let dispatcher: WebhookDispatcher;
  const clock = fixedClock(NOW);
  const sender = new FakeSender();
  const errors: unknown[] = [];
  const bus = new InMemoryEventBus({ onError: (err) => errors.push(err) });
  const deps = () => ({ events: services.events, clock, ids: services.ids, personal: services.personal, sender });
  const start = () =>
    startWebhookDispatcher({ events: services.events, reads: services.reads, runner: services.runner, clock, sender, personal: services.personal, bus, intervalMs: 50, onError: (err) => errors.push(err) });
  const ingest = async (rows: IngestRow[]) => {
    const r = await ingestRows(services.events, clock, rows);
    if (r.position) await services.runner.waitFor(r.position);
    return r;
  };
  const url = (name: string) => `https://${name}.hooks.example.com/scores`;
  const register = async (account: string, name: string, eventType = 'score_move') => (await registerWebhook(deps(), { accountId: account, eventType, url: url(name) })).id;
  const checkpoint = async () => (await services.reads.get(webhookDispatchCheckpoint, 'dispatch'))?.position ?? null;

  before(async () => {
    dir = tempDir('scores-dispatch-');
    services = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })), { clock });
    await services.runner.start();
    dispatcher = await start();
  });
  after(async () => {
    await dispatcher.stop();
    await bus.close();
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends a score move once to each active score_move webhook, and a flag date to divergence_event webhooks', async () => {
    await register('acct_a', 'a');
    await register('acct_a', 'b');
    await register('acct_c', 'c', 'divergence_event');
    const deleted = await register('acct_d', 'd');
    await deleteWebhook(deps(), 'acct_d', deleted);
    // Deactivated by a 410 on a live message (delivered by the dispatcher itself).
    const gone = await register('acct_e', 'e');
    sender.answers.set(url('e'), [{ ok: false, status_code: 410, error: 'receiver answered 410' }]);
    await queueMessage(deps(), gone, liveEnvelope([scoreMoveEvent({ ticker: 'ZZZ', date: '2024-01-02', service_score: 70, prior_score: 50 })], clock.now()));
    await until('the 410', async () => (await services.reads.get(webhooks, String(gone)))?.is_active === false);
    expect(sender.to(url('e'))).to.have.length(1);

    await ingest([listing('AAA'), listing('BBB'), listing('CCC'), score('AAA', '2024-03-01', 50, 50), score('BBB', '2024-03-01', 50, 50), score('CCC', '2024-03-01', 50, 50)]);
    // The first day: no prior score, no move; no gap, no extreme.
    await dispatcher.drain();
    expect(sender.total()).to.equal(1);

    // AAA moves by 15.3; BBB by less than 10. AAA's gap (10) is the day's extreme.
    await ingest([score('AAA', '2024-03-04', 70, 60), score('BBB', '2024-03-04', 52, 50), score('CCC', '2024-03-04', 50, 50)]);
    await until('the moves', () => sender.to(url('a')).length === 1 && sender.to(url('b')).length === 1 && sender.to(url('c')).length === 1, 2_000);
    await pause(200);
    for (const name of ['a', 'b', 'c']) expect(sender.to(url(name)), name).to.have.length(1);
    expect(sender.to(url('d'))).to.have.length(0);
    expect(sender.to(url('e'))).to.have.length(1);

    const aaa = compositeScore(70, 60);
    const move = body(sender.to(url('a'))[0]!);
    expect(move).to.deep.equal({
      events: [{ type: 'score_move', ticker: 'AAA', date: '2024-03-04', service_score: aaa, prior_score: 50, delta: round1(aaa - 50), test: false }],
      sent_at: NOW,
      source: 'scores-service',
      test: false,
    });
    expect(sender.to(url('a'))[0]!.headers['webhook-id']).to.match(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(sender.to(url('b'))[0]!.headers['webhook-id']).not.to.equal(sender.to(url('a'))[0]!.headers['webhook-id']);
    const flag = body(sender.to(url('c'))[0]!);
    expect(flag.events).to.deep.equal([
      { type: 'divergence_event', ticker: 'AAA', date: '2024-03-04', direction: 'bull', gap: 10, percentile: 1, main_street: 70, wall_street: 60, service_score: aaa, test: false },
    ]);
    expect(errors).to.deep.equal([]);
  });

  it('sends nothing when the same rows come again, nor when a move already sent is restated', async () => {
    const before = sender.total();
    const again = await ingest([score('AAA', '2024-03-04', 70, 60), score('BBB', '2024-03-04', 52, 50)]);
    expect(again.events).to.equal(0);
    const restated = await ingest([score('AAA', '2024-03-04', 72, 60)]);
    expect(restated.events).to.equal(1);
    await dispatcher.drain();
    await pause(200);
    expect(sender.total()).to.equal(before);
  });

  it('retries a failing receiver on the schedule as the clock moves', async () => {
    await register('acct_f', 'f');
    sender.answers.set(url('f'), [{ ok: false, status_code: 503, error: 'receiver answered 503' }]);
    const a = sender.to(url('a')).length;
    await ingest([score('AAA', '2024-03-05', 50, 50), score('BBB', '2024-03-05', 52, 50), score('CCC', '2024-03-05', 50, 50)]);
    await until('the first attempts', () => sender.to(url('f')).length === 1 && sender.to(url('a')).length === a + 1);
    // Not due before 5 s.
    clock.advance(4_000);
    await dispatcher.drain();
    await pause(150);
    expect(sender.to(url('f'))).to.have.length(1);
    clock.advance(1_000);
    await until('the retry', () => sender.to(url('f')).length === 2);
    const [first, second] = sender.to(url('f'));
    expect(second!.body).to.equal(first!.body);
    expect(second!.headers['webhook-id']).to.equal(first!.headers['webhook-id']);
    expect(body(first!).events.map((e) => [e.ticker, e.date])).to.deep.equal([['AAA', '2024-03-05']]);
    clock.advance(60_000);
    await dispatcher.drain();
    await pause(150);
    expect(sender.to(url('f'))).to.have.length(2);
  });

  it('after a restart, delivers a batch appended while stopped once, and decides nothing twice', async () => {
    await dispatcher.stop();
    const saved = await checkpoint();
    expect(saved).to.be.a('string');
    const before = sender.total();
    const a = sender.to(url('a')).length;
    await ingest([score('AAA', '2024-03-06', 70, 60), score('BBB', '2024-03-06', 52, 50), score('CCC', '2024-03-06', 50, 50)]);
    await pause(100);
    expect(sender.total()).to.equal(before);

    dispatcher = await start();
    await until('the batch of the downtime', () => sender.to(url('a')).length === a + 1);
    await dispatcher.drain();
    await pause(200);
    expect(body(sender.to(url('a'))[a]!).events.map((e) => [e.ticker, e.date])).to.deep.equal([['AAA', '2024-03-06']]);
    // a, b and f (the move); c: AAA's new extreme (its event of 03-04 closed on 03-05).
    expect(sender.total()).to.equal(before + 4);
    const flags = sender.to(url('c')).map((r) => body(r).events.map((e) => [e.type, e.ticker, e.date]));
    expect(flags.slice(-1)).to.deep.equal([[['divergence_event', 'AAA', '2024-03-06']]]);

    // A crash before the checkpoint was saved: the same batches are decided again, and nothing is sent.
    await dispatcher.stop();
    await services.reads.commit({ writes: [{ op: 'upsert', collection: webhookDispatchCheckpoint.name, id: 'dispatch', doc: { id: 'dispatch', position: saved } }], checkpoints: {} });
    dispatcher = await start();
    await dispatcher.drain();
    await pause(200);
    expect(sender.total()).to.equal(before + 4);
    await dispatcher.stop();
    expect(await checkpoint()).to.equal(services.runner.position);
    dispatcher = await start();
    expect(errors).to.deep.equal([]);
  });

  it('delivers to many webhooks concurrently: one slow receiver does not hold the others', async () => {
    const names: string[] = [];
    for (let i = 0; i < 60; i++) {
      const name = `many${i}`;
      await register(`acct_many${Math.floor(i / 10)}`, name);
      names.push(name);
    }
    sender.delayMs = 100;
    await ingest([score('AAA', '2024-03-07', 50, 50), score('BBB', '2024-03-07', 52, 50), score('CCC', '2024-03-07', 50, 50)]);
    await until('every webhook', () => names.every((n) => sender.to(url(n)).length === 1), 60_000);
    // Sends overlapped, and no more of them than the dispatcher's bound: counted, not timed.
    expect(sender.maxInFlight).to.be.within(2, 16);
    sender.delayMs = 0;
  });
});

describe('The dispatcher and deliverMessage', () => {
  it('deliverMessage does not attempt a message before its next attempt is due', async () => {
    const dir = tempDir('scores-dispatch-due-');
    const clock = fixedClock(NOW);
    const services = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })), { clock });
    try {
      const sender = new FakeSender();
      const deps = { events: services.events, clock, ids: services.ids, personal: services.personal, sender };
      const hook = await registerWebhook(deps, { accountId: 'acct_x', eventType: 'score_move', url: 'https://x.hooks.example.com/' });
      const envelope = liveEnvelope([scoreMoveEvent({ ticker: 'AAA', date: '2024-03-04', service_score: 70, prior_score: 50 })], clock.now());
      const id = (await queueMessage(deps, hook.id, envelope, { messageId: 'msg_fixed', onlyNewEvents: true }))!;
      expect(id).to.equal('msg_fixed');
      sender.answers.set('https://x.hooks.example.com/', [{ ok: false, status_code: 500, error: 'receiver answered 500' }]);
      expect(await deliverMessage(deps, hook.id, id)).to.include({ ok: false });
      expect(await deliverMessage(deps, hook.id, id)).to.equal(null);
      clock.advance(5_000);
      expect(await deliverMessage(deps, hook.id, id)).to.include({ ok: true });
      // Delivered: the same id is not queued again, nor the same (ticker, date) under another id.
      expect(await queueMessage(deps, hook.id, envelope, { messageId: 'msg_fixed' })).to.equal(null);
      expect(await queueMessage(deps, hook.id, envelope, { messageId: 'msg_other', onlyNewEvents: true })).to.equal(null);
      expect(await queueMessage(deps, hook.id, envelope, { messageId: 'msg_third' })).to.equal('msg_third');
    } finally {
      await services.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('Two dispatchers in one consumer group (two processes, one store, one bus)', function () {
  this.timeout(60_000);

  it('share the sending: each message is delivered exactly once, and both dispatchers send some', async () => {
    const dir = tempDir('scores-dispatch-group-');
    const clock = fixedClock(NOW);
    const services = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })), { clock });
    const errors: unknown[] = [];
    const bus = new InMemoryEventBus({ onError: (err) => errors.push(err) });
    const senders = [new FakeSender(), new FakeSender()];
    const dispatchers: WebhookDispatcher[] = [];
    // One process's dispatchers on one bus share their receipts: each drain hears what the other received.
    const receipts = new DrainReceipts();
    try {
      await services.runner.start();
      // A long interval: no timer publishes a message again while it is being sent. The in-memory
      // bus keeps a key's order but, unlike a Kafka partition, may hand a later copy of a message to
      // the other member, whose send could race the first one (Kafka keeps a key on one consumer).
      for (const sender of senders) {
        dispatchers.push(
          await startWebhookDispatcher({ events: services.events, reads: services.reads, runner: services.runner, clock, sender, personal: services.personal, bus, receipts, intervalMs: 60_000, onError: (err) => errors.push(err) }),
        );
      }
      const deps = { events: services.events, clock, ids: services.ids, personal: services.personal, sender: senders[0]! };
      await ingestRows(services.events, clock, [listing('AAA'), listing('BBB'), score('AAA', '2024-03-01', 50, 50), score('BBB', '2024-03-01', 50, 50)]);
      const urls: string[] = [];
      for (let i = 0; i < 40; i++) {
        const u = `https://group${i}.hooks.example.com/scores`;
        await registerWebhook(deps, { accountId: `acct_group${Math.floor(i / 10)}`, eventType: 'score_move', url: u });
        urls.push(u);
      }
      await services.runner.waitForHead();
      for (const s of senders) s.delayMs = 20;

      // A message that is not one: reported, and the consumer goes on.
      await bus.publish(WEBHOOK_DELIVER_TOPIC, [{ key: '1', value: 'not json' }]);
      await ingestRows(services.events, clock, [score('AAA', '2024-03-04', 70, 60), score('BBB', '2024-03-04', 52, 50)]);
      const sent = (u: string) => senders[0]!.to(u).length + senders[1]!.to(u).length;
      await until('every webhook', () => urls.every((u) => sent(u) >= 1), 10_000);
      await pause(300);
      await Promise.all(dispatchers.map((d) => d.drain()));
      await pause(100);

      for (const u of urls) expect(sent(u), u).to.equal(1);
      const ids = new Set(senders.flatMap((s) => [...s.received.values()].flat().map((r) => r.headers['webhook-id'])));
      expect(ids.size).to.equal(urls.length);
      expect(senders[0]!.total(), 'first dispatcher').to.be.above(0);
      expect(senders[1]!.total(), 'second dispatcher').to.be.above(0);
      expect(senders[0]!.total() + senders[1]!.total()).to.equal(urls.length);
      expect(errors).to.have.length(1);
      expect(String(errors[0])).to.match(/not a webhook delivery message/);
    } finally {
      for (const d of dispatchers) await d.stop();
      await bus.close();
      await services.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A store of its own, its projector runner and one dispatcher on an in-memory bus, closed after `run`. */
async function withDispatcher(
  prefix: string,
  run: (f: { services: Services; clock: ReturnType<typeof fixedClock>; sender: FakeSender; dispatcher: WebhookDispatcher; ingest: (rows: IngestRow[]) => Promise<void>; errors: unknown[] }) => Promise<void>,
): Promise<void> {
  const dir = tempDir(prefix);
  const clock = fixedClock(NOW);
  const services = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })), { clock });
  const errors: unknown[] = [];
  const bus = new InMemoryEventBus({ onError: (err) => errors.push(err) });
  const sender = new FakeSender();
  let dispatcher: WebhookDispatcher | null = null;
  const ingest = async (rows: IngestRow[]) => {
    const r = await ingestRows(services.events, clock, rows);
    if (r.position) await services.runner.waitFor(r.position);
  };
  try {
    await services.runner.start();
    dispatcher = await startWebhookDispatcher({ events: services.events, reads: services.reads, runner: services.runner, clock, sender, personal: services.personal, bus, intervalMs: 20, onError: (err) => errors.push(err) });
    await run({ services, clock, sender, dispatcher, ingest, errors });
  } finally {
    await dispatcher?.stop();
    await bus.close();
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('When a receiver keeps failing, or answers 410', function () {
  this.timeout(60_000);

  it('retries on the schedule, deactivates after 5 days of failures (at once on a 410), and sends nothing more', async () => {
    await withDispatcher('scores-dispatch-deactivate-', async ({ services, clock, sender, dispatcher, ingest, errors }) => {
      const isActive = async (id: number) => (await services.reads.get(webhooks, String(id)))?.is_active;
      const deps = { events: services.events, clock, ids: services.ids, personal: services.personal, sender };
      const failing = 'https://failing.hooks.example.com/';
      const gone = 'https://gone.hooks.example.com/';
      const failingId = (await registerWebhook(deps, { accountId: 'acct_failing', eventType: 'score_move', url: failing })).id;
      const goneId = (await registerWebhook(deps, { accountId: 'acct_gone', eventType: 'score_move', url: gone })).id;
      sender.answers.set(failing, Array.from({ length: 20 }, () => ({ ok: false, status_code: 503, error: 'receiver answered 503' })));
      sender.answers.set(gone, [{ ok: false, status_code: 410, error: 'receiver answered 410' }]);
      await ingest([listing('MOV'), score('MOV', '2024-03-01', 50, 50)]);
      await ingest([score('MOV', '2024-03-04', 80, 80)]);

      await until('the first attempts', () => sender.to(failing).length === 1 && sender.to(gone).length === 1);
      await until('the 410 deactivating its webhook', async () => (await isActive(goneId)) === false);
      // At once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: the clock moves to each retry in turn.
      for (const [i, wait] of [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000].entries()) {
        clock.advance(wait);
        await until(`attempt ${i + 2}`, () => sender.to(failing).length === i + 2);
      }
      clock.advance(36_000_000);
      await dispatcher.drain();
      await pause(100);
      expect(sender.to(failing), 'given up after 8 attempts').to.have.length(8);
      expect(await isActive(failingId)).to.equal(true);

      // Five days after the first failure, the next message's failure deactivates the webhook.
      clock.advance(5 * 86_400_000 - (5_000 + 300_000 + 1_800_000 + 7_200_000 + 18_000_000 + 72_000_000 + 36_000_000));
      await ingest([score('MOV', '2024-03-14', 50, 50)]);
      await until('the failure that deactivates', () => sender.to(failing).length === 9);
      await until('the webhook deactivated', async () => (await isActive(failingId)) === false);

      await ingest([score('MOV', '2024-03-15', 80, 80)]);
      clock.advance(86_400_000);
      await dispatcher.drain();
      await pause(200);
      expect(sender.to(failing)).to.have.length(9);
      expect(sender.to(gone)).to.have.length(1);
      expect(errors).to.deep.equal([]);
    });
  });
});

describe('When a restatement makes a move', function () {
  this.timeout(60_000);

  it('sends the move of the restated day, once', async () => {
    await withDispatcher('scores-dispatch-restated-', async ({ services, clock, sender, dispatcher, ingest, errors }) => {
      const hook = 'https://restated.hooks.example.com/';
      await registerWebhook({ events: services.events, clock, ids: services.ids, personal: services.personal }, { accountId: 'acct_restated', eventType: 'score_move', url: hook });
      await ingest([listing('RST'), score('RST', '2024-03-01', 50, 50)]);
      await ingest([score('RST', '2024-03-04', 52, 50)]);
      await dispatcher.drain();
      await pause(100);
      expect(sender.to(hook), 'a move under 10 is not sent').to.have.length(0);

      await ingest([score('RST', '2024-03-04', 75, 70)]);
      await until('the restated move', () => sender.to(hook).length === 1);
      const restated = compositeScore(75, 70);
      expect(body(sender.to(hook)[0]!).events).to.deep.equal([
        { type: 'score_move', ticker: 'RST', date: '2024-03-04', service_score: restated, prior_score: 50, delta: round1(restated - 50), test: false },
      ]);
      await ingest([score('RST', '2024-03-04', 75, 70)]);
      await dispatcher.drain();
      await pause(100);
      expect(sender.to(hook)).to.have.length(1);
      expect(errors).to.deep.equal([]);
    });
  });
});
