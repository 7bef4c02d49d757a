import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixedClock, systemClock, type Clock } from '../../src/core/clock.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { fencedMailer, fencedWebhookSender, WEBHOOK_SEND_SPARE_MS } from '../../src/core/fenced-effects.js';
import { JobLease, LeaseLostError, leaseStreamOf } from '../../src/core/lease.js';
import { runWhileOwned, type LeaseRun } from '../../src/core/lease-runner.js';
import type { MailMessage } from '../../src/core/mail.port.js';
import type { DeliveryResult, WebhookRequest, WebhookSender } from '../../src/core/webhook-sender.port.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitUntil(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/** Keeps what it was asked to send; answers 204. */
class RecordingSender implements WebhookSender {
  readonly sent: WebhookRequest[] = [];
  async send(request: WebhookRequest): Promise<DeliveryResult> {
    this.sent.push(request);
    return { ok: true, status_code: 204, error: null, delivered_to: '203.0.113.7' };
  }
  async refusal(): Promise<string | null> {
    return null;
  }
}

/** The store as an owner cut off from writing sees it once `cut` is set (a full disk, a read-only standby): reads answer, appends fail. */
function cuttable(store: EventStore): { events: EventStore; cut: boolean } {
  const refused = () => Promise.reject(new Error('connection terminated'));
  const link = { cut: false, events: store };
  link.events = {
    append: (streamId, events, expected) => (link.cut ? refused() : store.append(streamId, events, expected)),
    appendMany: (appends) => (link.cut ? refused() : store.appendMany(appends)),
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribeToAll: (options) => store.subscribeToAll(options),
    close: async () => undefined,
  };
  return link;
}

const request: WebhookRequest = { url: 'https://hooks.example.com/scores', body: '{}', headers: { 'webhook-id': 'msg_1' } };
const mail: MailMessage = { id: 'alert_1', to: 'ops@example.com', subject: 'Usage at 90%', text: 'You have used 90% of your calls.' };

describe('Effects outside the store, fenced by a job lease (SQLite)', function () {
  let dir: string;
  let db: ReturnType<typeof openSqlite>;
  let store: SqliteEventStore;
  let job: string;
  let n = 0;
  const runs: LeaseRun[] = [];
  const lease = (owner: string, clock: Clock = fixedClock('2025-01-01T00:00:00Z'), events: EventStore = store) => new JobLease(events, clock, { job, owner, ttlMs: 15_000 });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'scores-lease-effects-'));
    db = openSqlite(join(dir, 'events.db'));
    store = new SqliteEventStore(db, systemClock);
  });
  beforeEach(() => {
    job = `webhooks-${++n}`;
  });
  afterEach(async () => {
    for (const r of runs.splice(0)) await r.stop();
  });
  after(async () => {
    await store.close();
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('sends a webhook while the lease holds longer than the send may take', async () => {
    const owner = lease('owner');
    expect(await owner.acquire()).to.equal(true);
    const sender = new RecordingSender();

    await fencedWebhookSender(sender, owner).send(request);

    expect(sender.sent).to.deep.equal([request]);
    expect(await store.readStream(leaseStreamOf(job)), 'no renewal needed').to.have.length(1);
  });

  it('renews first when the lease would expire within the send’s time-out (once for sends made together), then sends', async () => {
    const clock = fixedClock('2025-01-01T00:00:00Z');
    const owner = lease('owner', clock);
    expect(await owner.acquire()).to.equal(true);
    clock.advance(15_000 - WEBHOOK_SEND_SPARE_MS + 1);
    const sender = new RecordingSender();
    const fenced = fencedWebhookSender(sender, owner);

    await Promise.all([fenced.send(request), fenced.send(request), fenced.send(request)]);

    expect(sender.sent).to.have.length(3);
    expect((await store.readStream(leaseStreamOf(job))).map((e) => e.type)).to.deep.equal(['LeaseAcquired', 'LeaseRenewed']);
  });

  it('skips the send when the lease is about to expire and cannot be renewed', async () => {
    const clock = fixedClock('2025-01-01T00:00:00Z');
    const link = cuttable(store);
    const owner = lease('owner', clock, link.events);
    expect(await owner.acquire()).to.equal(true);
    const sender = new RecordingSender();
    const fenced = fencedWebhookSender(sender, owner);
    // 9 s left, less than the 10 s a send may take, and the renewal's append fails.
    clock.advance(6_000);
    link.cut = true;

    const refused = await fenced.send(request).catch((e: unknown) => e);

    expect((refused as Error).message).to.equal('connection terminated');
    expect(sender.sent, 'nothing sent').to.deep.equal([]);
    expect(owner.owned, 'not lost: the runner keeps the job until the lease expires').to.equal(true);
  });

  it('skips the send, and tells the runner, when another owner took the lease', async () => {
    const clock = fixedClock('2025-01-01T00:00:00Z');
    const paused = lease('paused', clock);
    expect(await paused.acquire()).to.equal(true);
    let told = 0;
    paused.onLost(() => told++);
    // An owner whose clock is past the paused one's expiry takes over.
    expect(await lease('next', fixedClock('2025-01-01T00:00:16Z')).acquire()).to.equal(true);
    const sender = new RecordingSender();

    const refused = await fencedWebhookSender(sender, paused).send(request).catch((e: unknown) => e);

    expect(refused).to.be.instanceOf(LeaseLostError);
    expect(sender.sent).to.deep.equal([]);
    expect(paused.owned).to.equal(false);
    expect(told).to.equal(1);
  });

  it('hands an alert email to the mailer only with time to spare on the lease', async () => {
    const clock = fixedClock('2025-01-01T00:00:00Z');
    const link = cuttable(store);
    const owner = lease('owner', clock, link.events);
    expect(await owner.acquire()).to.equal(true);
    const handed: MailMessage[] = [];
    const mailer = fencedMailer({ send: async (m) => void handed.push(m), forgetRecipient: async () => 0, close: async () => undefined }, owner);
    await mailer.send(mail);
    clock.advance(6_000);
    link.cut = true;

    const refused = await mailer.send({ ...mail, id: 'alert_2' }).catch((e: unknown) => e);

    expect((refused as Error).message).to.equal('connection terminated');
    expect(handed.map((m) => m.id)).to.deep.equal(['alert_1']);
  });

  it('stops the job as soon as one of its fenced writes is refused, not at its next renewal', async () => {
    const owner = lease('owner', systemClock);
    let stopped = false;
    const changes: boolean[] = [];
    const run = runWhileOwned(owner, () => Promise.resolve({ stop: () => Promise.resolve(void (stopped = true)) }), {
      renewMs: 600_000,
      onError: (err) => expect.fail(String(err)),
      onOwnerChange: (owned) => changes.push(owned),
    });
    runs.push(run);
    await waitUntil(() => run.owned);
    expect(await lease('thief', fixedClock(new Date(Date.now() + 16_000))).acquire()).to.equal(true);

    const refused = await owner.append([{ streamId: `decisions-${job}`, events: [{ type: 'BatchDecided', data: {} }] }]).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(LeaseLostError);
    await waitUntil(() => stopped);

    expect(run.owned).to.equal(false);
    expect(changes).to.deep.equal([true, false]);
  });
});
