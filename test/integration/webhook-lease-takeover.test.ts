import { expect } from 'chai';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { queueMessage } from '../../commands/deliver-webhooks/webhook-delivery.handler.js';
import { registerWebhook } from '../../commands/manage-webhooks/webhooks.handler.js';
import { startJobs, type RunningJobs } from '../../src/app/background-workers.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { fixedClock } from '../../src/core/clock.js';
import { JobLease, leaseStreamOf } from '../../src/core/lease.js';
import { liveEnvelope, scoreMoveEvent } from '../../src/domain/webhooks/webhook-envelope.js';
import { webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { receiverCertificate } from '../support/receiver-certificate.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2024-03-10T12:00:00.000Z';
/** How long the receiver is watched after the takeover: the old owner's due timer publishes the unrecorded message every second. */
const WATCH_MS = 3_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * Issue 41, item 6: a worker whose `webhooks` lease was taken over between a delivery's send and its
 * record (its record refused by the fence) sent the message again and again until its next renewal.
 * Two workers (`startJobs` with leases, as `scores worker` runs them) over one SQLite log and one
 * in-memory bus, a real HTTPS receiver; another owner takes the lease while the receiver holds the
 * first request.
 */
describe('A webhook delivery whose lease is taken over between its send and its record', function () {
  this.timeout(90_000);
  let dir: string;
  let services: Services;
  let receiver: Server;
  const workers: RunningJobs[] = [];
  const hits: IncomingHttpHeaders[] = [];
  let onFirstHit: (() => Promise<void>) | null = null;

  before(async () => {
    dir = tempDir('scores-webhook-takeover-');
    const pems = await receiverCertificate(dir);
    receiver = createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
      req.resume();
      req.on('end', () => {
        hits.push(req.headers);
        const first = onFirstHit;
        onFirstHit = null;
        void (first ?? (() => Promise.resolve()))().finally(() => res.writeHead(204).end());
      });
    });
    receiver.listen(0, '127.0.0.1');
    await once(receiver, 'listening');
    const env = testEnv(dir, NOW, { SCORES_DEMO: 'off', WEBHOOK_CA_FILE: pems.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' });
    services = await openServices(loadConfig(env));
    await services.runner.start();
  });

  after(async () => {
    for (const w of workers) await w.stop();
    await services?.close();
    receiver?.closeAllConnections();
    receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const webhooksState = (w: RunningJobs) => w.states().find((s) => s.name === 'webhooks')!.state;
  const leaseEvents = () => services.events.readStream(leaseStreamOf('webhooks'));
  const recordedAttempts = async (id: number) => (await services.events.readStream(webhookStream(id))).filter((e) => e.type === 'WebhookDeliveryAttempted').length;

  /**
   * Takes the lease from its owner just after the owner renewed (its next renewal 5 s away, so only
   * the fence can tell it within the watch), as an owner whose clock is past the expiry would.
   */
  async function takeOverAfterARenewal(): Promise<JobLease> {
    const seen = (await leaseEvents()).length;
    await until('a renewal of the owner', async () => {
      const events = await leaseEvents();
      return events.length > seen && events[events.length - 1]!.type === 'LeaseRenewed';
    });
    const thief = new JobLease(services.events, fixedClock(new Date(Date.now() + 16_000)), { job: 'webhooks', owner: 'thief', ttlMs: 15_000 });
    await until('the takeover', () => thief.acquire());
    return thief;
  }

  it('reaches the receiver at most once more than the attempts recorded, and the old owner stops at once', async () => {
    workers.push(await startJobs(services, ['webhooks'], { dataset: null, leases: true }));
    workers.push(await startJobs(services, ['webhooks'], { dataset: null, leases: true }));
    await until('a worker running the webhooks job', () => workers.some((w) => webhooksState(w) === 'running'));
    const owner = workers.find((w) => webhooksState(w) === 'running')!;

    const deps = { events: services.events, clock: services.clock, transportClock: services.transportClock, ids: services.ids, personal: services.personal };
    const hook = await registerWebhook({ ...deps, allowSubnets: services.config.webhookAllowSubnets }, { accountId: 'acct_t', eventType: 'score_move', url: `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks` });
    let thief: JobLease | null = null;
    let takenAt = 0;
    onFirstHit = async () => {
      thief = await takeOverAfterARenewal();
      takenAt = hits.length;
    };
    const envelope = liveEnvelope([scoreMoveEvent({ ticker: 'AAA', date: '2024-03-08', service_score: 70, prior_score: 50 })], services.transportClock.now());
    const messageId = await queueMessage(deps, hook.id, envelope);

    await until('the takeover during the first send', () => thief !== null);
    await sleep(WATCH_MS);
    const recorded = await recordedAttempts(hook.id);
    expect(recorded, 'the first attempt, refused by the fence').to.equal(0);
    expect(hits.length, `receiver hits, ${hits.length - takenAt} of them in the ${WATCH_MS} ms after the takeover`).to.be.at.most(recorded + 1);
    expect(webhooksState(owner), 'the old owner stopped the job').to.equal('standby');

    // The job's next owner (either worker) sends it once more and records it.
    await thief!.release();
    await until('the attempt recorded by the next owner', async () => (await recordedAttempts(hook.id)) > 0);
    await sleep(1_000);
    expect(hits.length).to.be.at.most((await recordedAttempts(hook.id)) + 1);
    expect(hits.length, 'the first send and the next owner’s').to.equal(2);
    expect(hits.map((h) => h['webhook-id'])).to.deep.equal([messageId, messageId]);
  });
});
