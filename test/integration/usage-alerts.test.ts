import { expect } from 'chai';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { ledgerDecider } from '../../src/domain/ledger/ledger.decider.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';

const { decide } = ledgerDecider;
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { accountStream, type AccountCreated } from '../../src/domain/accounts/account.events.js';
import { startAlertDispatcher, type AlertDispatcher } from '../../commands/send-usage-alerts/usage-alerts.reactor.js';
import { FileOutboxMailer } from '../../infra/mail/file-outbox.js';
import { SmtpMailer } from '../../infra/mail/smtp.js';
import { apiKeysProjection } from '../../projections/api-keys/api-keys.projection.js';
import { mailOutbox, usageAlertsProjection, type MailOutboxDoc } from '../../projections/usage-alerts/usage-alerts.projection.js';
import { mailStream } from '../../src/domain/mail/mail.events.js';
import { fixedClock } from '../../src/core/clock.js';
import type { Mailer, MailMessage } from '../../src/core/mail.port.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import type { Tier } from '../../src/domain/plans.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2024-04-10T09:00:00.000Z';
const FROM = 'Scores API <alerts@scores.example>';

/** The file outbox, with a count of the messages handed to it and an optional failure switch. */
class RecordingMailer implements Mailer {
  readonly sent: MailMessage[] = [];
  failNext = 0;
  constructor(readonly inner: FileOutboxMailer) {}
  async send(message: MailMessage): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('SMTP 421 try again later');
    }
    await this.inner.send(message);
    this.sent.push(message);
  }
  forgetRecipient(address: string): Promise<number> {
    return this.inner.forgetRecipient(address);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

interface Fixture {
  dir: string;
  outbox: string;
  services: Services;
  runner: ProjectorRunner;
  mailer: RecordingMailer;
  clock: ReturnType<typeof fixedClock>;
  dispatcher: AlertDispatcher;
  errors: { err: unknown; alertId: string | undefined }[];
  close(): Promise<void>;
}

async function fixture(intervalMs = 3_600_000): Promise<Fixture> {
  const dir = tempDir();
  const services = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })));
  const runner = new ProjectorRunner(services.events, services.reads, [apiKeysProjection, usageAlertsProjection]);
  await runner.start();
  const outbox = join(dir, 'outbox');
  const clock = fixedClock(NOW);
  const mailer = new RecordingMailer(new FileOutboxMailer({ dir: outbox, from: FROM, clock }));
  const errors: Fixture['errors'] = [];
  const dispatcher = startAlertDispatcher({
    reads: services.reads,
    events: services.events,
    mailer,
    personal: services.personal,
    clock,
    intervalMs,
    onError: (err, alertId) => errors.push({ err, alertId }),
  });
  return {
    dir,
    outbox,
    services,
    runner,
    mailer,
    clock,
    dispatcher,
    errors,
    async close() {
      await dispatcher.stop();
      await mailer.close();
      await runner.stop();
      await services.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An account with a ledger, as `keys create` would write it. */
async function openAccount(f: Fixture, accountId: string, email: string | null, tier: Tier): Promise<void> {
  const created: AccountCreated = { type: 'AccountCreated', data: { account_id: accountId, email, at: NOW } };
  await f.services.events.append(accountStream(accountId), [created], 'no_stream');
  await ledger(f, accountId, { type: 'OpenLedger', data: { account_id: accountId, tier, pro: false } });
}

/** Runs a ledger command through the real decider and waits until the read models have it. */
async function ledger(f: Fixture, accountId: string, command: LedgerCommand): Promise<void> {
  const stream = ledgerStream(accountId);
  const history = await f.services.events.readStream(stream);
  const events = decide(foldLedger(history), command, new Date(NOW));
  const r = await f.services.events.append(stream, events, history.length ? history[history.length - 1]!.revision : 'no_stream');
  await f.runner.waitFor(r.position);
}

let requests = 0;
const spend = (f: Fixture, accountId: string, cost: number) =>
  ledger(f, accountId, { type: 'DebitCredits', data: { request_id: `req-${++requests}`, endpoint: 'scores', channel: 'rest', cost } });

const outboxDocs = async (f: Fixture, accountId: string) =>
  (await f.services.reads.find(mailOutbox, { account_id: accountId }, { sort: [['created_at', 1], ['threshold', 1]] })).items;

const emlFiles = (f: Fixture) => {
  try {
    return readdirSync(f.outbox).filter((n) => n.endsWith('.eml')).sort();
  } catch {
    return [];
  }
};

/** Headers and decoded body of an .eml file (quoted-printable, as nodemailer writes long lines). */
function readEml(path: string): { headers: Record<string, string>; body: string } {
  const raw = readFileSync(path, 'utf8');
  const split = raw.indexOf('\r\n\r\n');
  const headers: Record<string, string> = {};
  for (const line of raw.slice(0, split).replace(/\r\n[ \t]/g, ' ').split('\r\n')) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.slice(split + 4);
  if (headers['content-transfer-encoding'] === 'quoted-printable') {
    const bytes = body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    body = Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return { headers, body: body.replace(/\r\n/g, '\n') };
}

describe('Usage-alert emails', function () {
  this.timeout(20_000);

  describe('When a hobbyist account crosses 75% and then 90% of its allowance', () => {
    let f: Fixture;
    let docs: MailOutboxDoc[];
    let sent: number;

    before(async () => {
      f = await fixture();
      await openAccount(f, 'acc-a', 'dev@a.example', 'hobbyist');
      await spend(f, 'acc-a', 20_000);
      await spend(f, 'acc-a', 2_600);
      sent = await f.dispatcher.drain();
      await f.runner.waitForHead();
      docs = await outboxDocs(f, 'acc-a');
    });
    after(() => f.close());

    it('writes exactly one .eml file per alert, named by the alert id', () => {
      expect(sent).to.equal(2);
      expect(docs.map((d) => d.threshold)).to.deep.equal([75, 90]);
      expect(emlFiles(f)).to.deep.equal(docs.map((d) => `${d.id}.eml`).sort());
    });

    it('addresses each file to the account with the threshold, the numbers and the reset', () => {
      const [at75, at90] = docs.map((d) => readEml(join(f.outbox, `${d.id}.eml`)));
      // 20,000 of 25,000 is 80%: subject and body give the one figure, the body names the 75% threshold.
      expect(at75!.headers).to.include({ to: 'dev@a.example', from: FROM, subject: 'You have used 80% of your 25,000 monthly credits' });
      expect(at75!.body).to.contain('has used 80% of its monthly credit allowance');
      expect(at75!.body).to.contain('past the 75% alert threshold.');
      expect(at75!.headers['message-id']).to.equal(`<${docs[0]!.id}@scores.example>`);
      expect(at75!.body).to.match(/Used this month: +20,000 credits/);
      expect(at90!.headers).to.include({ to: 'dev@a.example', subject: 'You have used 90% of your 25,000 monthly credits' });
      expect(at90!.body).to.match(/Used this month: +22,600 credits/);
      expect(at90!.body).to.match(/Left this month: +2,400 credits/);
      expect(at90!.body).to.contain('1 May 2024, 00:00 UTC (2024-05-01T00:00:00.000Z)');
      expect(at90!.body).to.contain('refused with HTTP 429 credits_exhausted');
      expect(at90!.body).to.contain('turn overage on (billed at $0.50 per 1,000 credits)');
    });

    it('records each send on the mail stream and marks the outbox docs sent', async () => {
      const recorded = await f.services.events.readStream(mailStream('acc-a'));
      expect(recorded.map((e) => [e.type, (e.data as { alert_event_id: string }).alert_event_id])).to.deep.equal(
        docs.map((d) => ['UsageAlertEmailed', d.id]),
      );
      expect(docs.map((d) => [d.status, d.sent_at])).to.deep.equal([
        ['sent', NOW],
        ['sent', NOW],
      ]);
    });

    it('sends nothing when drained again', async () => {
      expect(await f.dispatcher.drain()).to.equal(0);
      expect(f.mailer.sent).to.have.length(2);
      expect(emlFiles(f)).to.have.length(2);
    });

    it('sends nothing when the read model lags behind the log and still shows them pending', async () => {
      await f.runner.stop();
      await f.services.reads.commit({
        writes: docs.map((d) => ({ op: 'upsert' as const, collection: mailOutbox.name, id: d.id, doc: { ...d, status: 'pending', sent_at: null } })),
        checkpoints: {},
      });
      expect(await f.dispatcher.drain()).to.equal(0);
      expect(f.mailer.sent).to.have.length(2);
    });

    it('keeps them sent after the read models are rebuilt from the log, and sends nothing again', async () => {
      await f.runner.replay();
      expect((await outboxDocs(f, 'acc-a')).map((d) => d.status)).to.deep.equal(['sent', 'sent']);
      expect(await f.dispatcher.drain()).to.equal(0);
      expect(f.mailer.sent).to.have.length(2);
      expect(emlFiles(f)).to.have.length(2);
    });

    it('raises no further alert below the next threshold', async () => {
      await spend(f, 'acc-a', 100);
      expect(await outboxDocs(f, 'acc-a')).to.have.length(2);
      expect(await f.dispatcher.drain()).to.equal(0);
    });
  });

  describe('When the account has no email address', () => {
    let f: Fixture;
    before(async () => {
      f = await fixture();
      await openAccount(f, 'acc-b', null, 'free');
      await spend(f, 'acc-b', 800);
    });
    after(() => f.close());

    it('records the alert as no_address and sends nothing', async () => {
      const docs = await outboxDocs(f, 'acc-b');
      expect(docs.map((d) => [d.threshold, d.status, d.to])).to.deep.equal([[75, 'no_address', null]]);
      expect(await f.dispatcher.drain()).to.equal(0);
      expect(f.mailer.sent).to.have.length(0);
      expect(emlFiles(f)).to.deep.equal([]);
    });
  });

  describe('When the address is sealed under the account key, and the account is forgotten later', () => {
    let f: Fixture;
    before(async () => {
      f = await fixture();
      await openAccount(f, 'acc-s', await f.services.personal.seal('acc-s', 'sealed@s.example', 'email'), 'free');
      await spend(f, 'acc-s', 800);
    });
    after(() => f.close());

    it('opens the address to send, and records the send with the address still sealed', async () => {
      expect(await f.dispatcher.drain()).to.equal(1);
      expect(f.mailer.sent.map((m) => m.to)).to.deep.equal(['sealed@s.example']);
      const [recorded] = await f.services.events.readStream(mailStream('acc-s'));
      expect((recorded!.data as { to: string }).to).to.match(/^pii:v1:/);
      const [doc] = await outboxDocs(f, 'acc-s');
      expect(doc!.to).to.match(/^pii:v1:/);
    });

    it('sends no alert of a forgotten account: its address no longer opens', async () => {
      await f.services.personal.forget('acc-s');
      await spend(f, 'acc-s', 100);
      expect((await outboxDocs(f, 'acc-s')).map((d) => [d.threshold, d.status])).to.deep.equal([
        [75, 'sent'],
        [90, 'pending'],
      ]);
      expect(await f.dispatcher.drain()).to.equal(0);
      expect(f.mailer.sent).to.have.length(1);
      expect(f.errors).to.deep.equal([]);
    });
  });

  describe('When the mailer fails', () => {
    let f: Fixture;
    before(async () => {
      f = await fixture();
      await openAccount(f, 'acc-c', 'ops@c.example', 'free');
      await spend(f, 'acc-c', 1_000);
    });
    after(() => f.close());

    it('leaves the alerts pending, reports each failure and records nothing', async () => {
      f.mailer.failNext = 3;
      expect(await f.dispatcher.drain()).to.equal(0);
      const docs = await outboxDocs(f, 'acc-c');
      expect(docs.map((d) => [d.threshold, d.status])).to.deep.equal([
        [75, 'pending'],
        [90, 'pending'],
        [100, 'pending'],
      ]);
      expect(f.errors.map((e) => e.alertId)).to.deep.equal(docs.map((d) => d.id));
      expect(String(f.errors[0]!.err)).to.contain('421');
      expect(await f.services.events.readStream(mailStream('acc-c'))).to.deep.equal([]);
      expect(emlFiles(f)).to.deep.equal([]);
    });

    it('waits before trying a failed alert again', async () => {
      f.clock.advance(10_000);
      expect(await f.dispatcher.drain()).to.equal(0);
      expect(f.errors).to.have.length(3);
    });

    it('sends them on a later pass once the wait is over', async () => {
      f.clock.advance(30_000);
      expect(await f.dispatcher.drain()).to.equal(3);
      await f.runner.waitForHead();
      expect((await outboxDocs(f, 'acc-c')).map((d) => d.status)).to.deep.equal(['sent', 'sent', 'sent']);
      expect(emlFiles(f)).to.have.length(3);
      const at100 = (await outboxDocs(f, 'acc-c')).find((d) => d.threshold === 100)!;
      const hardStop = readEml(join(f.outbox, `${at100.id}.eml`));
      expect(hardStop.headers).to.include({ to: 'ops@c.example', subject: 'You have used 100% of your 1,000 monthly credits' });
      expect(hardStop.body).to.contain('Your allowance is used up, so from now on calls are refused with HTTP 429 credits_exhausted');
      expect(hardStop.body).to.contain('The free tier has no overage: this is a hard stop.');
    });
  });

  describe('When the month of an alert is over before it could be sent', () => {
    let f: Fixture;
    before(async () => {
      f = await fixture();
      await openAccount(f, 'acc-d', 'late@d.example', 'free');
      await spend(f, 'acc-d', 750);
    });
    after(() => f.close());

    it('does not send it: the allowance has reset since', async () => {
      f.clock.set('2024-05-01T00:00:00.000Z');
      expect(await f.dispatcher.drain()).to.equal(0);
      expect(f.mailer.sent).to.have.length(0);
    });
  });

  describe('When the dispatcher runs on its own timer', () => {
    let f: Fixture;
    before(async () => {
      f = await fixture(20);
      await openAccount(f, 'acc-e', 'timer@e.example', 'free');
    });
    after(() => f.close());

    it('sends a new alert without being drained, and stops cleanly', async () => {
      await spend(f, 'acc-e', 800);
      for (let i = 0; i < 100 && f.mailer.sent.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(f.mailer.sent.map((m) => [m.to, m.subject])).to.deep.equal([['timer@e.example', 'You have used 80% of your 1,000 monthly credits']]);
      await f.dispatcher.stop();
      expect(await f.dispatcher.drain()).to.equal(0);
    });
  });

  describe('The file outbox', () => {
    let dir: string;
    before(() => {
      dir = tempDir();
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('keeps one file for an id sent twice, and leaves no temporary file', async () => {
      const outbox = new FileOutboxMailer({ dir: join(dir, 'out'), clock: fixedClock(NOW) });
      const message = { id: 'evt-1', to: 'a@example.com', subject: 'first', text: 'one' };
      await outbox.send(message);
      await outbox.send({ ...message, subject: 'second' });
      expect(readdirSync(join(dir, 'out'))).to.deep.equal(['evt-1.eml']);
      expect(readEml(join(dir, 'out', 'evt-1.eml')).headers).to.include({ subject: 'first', date: 'Wed, 10 Apr 2024 09:00:00 +0000' });
    });

    it('refuses an id that could name a file outside the outbox', async () => {
      const outbox = new FileOutboxMailer({ dir: join(dir, 'out2'), clock: fixedClock(NOW) });
      let error: unknown;
      await outbox.send({ id: '../escape', to: 'a@example.com', subject: 's', text: 't' }).catch((e: unknown) => (error = e));
      expect(error).to.have.property('name', 'MailError');
    });
  });

  describe('The SMTP mailer', () => {
    let server: Server;
    let port: number;
    const received: { from: string; to: string[]; data: string }[] = [];

    /** Just enough of an SMTP server to accept messages (no TLS, no auth). */
    before(async () => {
      server = createServer((socket) => {
        let mail = { from: '', to: [] as string[], data: '' };
        let inData = false;
        let buffer = '';
        socket.write('220 localhost test SMTP\r\n');
        socket.on('data', (chunk) => {
          buffer += chunk.toString('utf8');
          for (;;) {
            if (inData) {
              const end = buffer.indexOf('\r\n.\r\n');
              if (end < 0) return;
              mail.data = buffer.slice(0, end + 2);
              buffer = buffer.slice(end + 5);
              inData = false;
              received.push(mail);
              mail = { from: '', to: [], data: '' };
              socket.write('250 queued\r\n');
              continue;
            }
            const eol = buffer.indexOf('\r\n');
            if (eol < 0) return;
            const line = buffer.slice(0, eol);
            buffer = buffer.slice(eol + 2);
            const verb = line.slice(0, 4).toUpperCase();
            if (verb === 'EHLO' || verb === 'HELO') socket.write('250 localhost\r\n');
            else if (verb === 'MAIL') {
              mail.from = line.replace(/^MAIL FROM:<([^>]*)>.*$/i, '$1');
              socket.write('250 ok\r\n');
            } else if (verb === 'RCPT') {
              const to = line.replace(/^RCPT TO:<([^>]*)>.*$/i, '$1');
              mail.to.push(to);
              socket.write(to.endsWith('@rejected.example') ? '550 no such user\r\n' : '250 ok\r\n');
            } else if (verb === 'DATA') {
              inData = true;
              socket.write('354 go ahead\r\n');
            } else if (verb === 'QUIT') socket.end('221 bye\r\n');
            else socket.write('250 ok\r\n');
          }
        });
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      port = (server.address() as AddressInfo).port;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('sends the message with the From address and a Message-ID derived from the id', async () => {
      const smtp = new SmtpMailer({ url: `smtp://127.0.0.1:${port}`, from: FROM, clock: fixedClock(NOW) });
      await smtp.send({ id: 'evt-42', to: 'dev@a.example', subject: 'You have used 90% of your 25,000 monthly credits', text: 'Used 22,500' });
      await smtp.close();
      expect(received).to.have.length(1);
      expect(received[0]).to.include({ from: 'alerts@scores.example' });
      expect(received[0]!.to).to.deep.equal(['dev@a.example']);
      expect(received[0]!.data).to.contain('Message-ID: <evt-42@scores.example>');
      expect(received[0]!.data).to.contain('Subject: You have used 90% of your 25,000 monthly credits');
      expect(received[0]!.data).to.contain('Used 22,500');
    });

    it('turns a refusal into a MailError that names the message', async () => {
      const smtp = new SmtpMailer({ url: `smtp://127.0.0.1:${port}`, from: FROM, clock: fixedClock(NOW) });
      let error: unknown;
      await smtp.send({ id: 'evt-43', to: 'nobody@rejected.example', subject: 's', text: 't' }).catch((e: unknown) => (error = e));
      await smtp.close();
      expect(error).to.have.property('name', 'MailError');
      expect(error).to.have.property('messageId', 'evt-43');
      expect(String((error as Error).message)).to.contain('550');
    });
  });
});
