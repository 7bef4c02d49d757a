/**
 * Issue 33's slips, each where it is made: the usage-alert mail's subject and body from one
 * figure, the test webhook dated the day it is sent, the errors page's coverage example truly
 * outside top100, and the file outbox writing a link whole.
 */
import { expect } from 'chai';
import { readFileSync, rmSync } from 'node:fs';
import { FileOutboxMailer } from '../../infra/mail/file-outbox.js';
import { usageAlertMessage } from '../../projections/usage-alerts/usage-alerts.projection.js';
import { loadUsTickers } from '../../commands/seed-demo/dataset/us-tickers.js';
import { COVERAGE_EXAMPLE } from '../../src/app/http/pages/docs.page.js';
import { fixedClock } from '../../src/core/clock.js';
import { testEnvelope } from '../../src/domain/webhooks/webhook-envelope.js';
import { tempDir } from '../support/server.js';

describe('Issue 33 slips', () => {
  it('a usage alert raised at 88% by a call that crossed 75% says 88% in its subject and its body', () => {
    const { subject, text } = usageAlertMessage({ account_id: 'acc_1', period: '2024-04', threshold: 75, used: 4_400, allowance: 5_000, plan: null });
    expect(subject).to.equal('You have used 88% of your 5,000 monthly credits');
    expect(text).to.contain('account acc_1 has used 88% of its monthly credit allowance for April 2024, past the 75% alert threshold.');
    expect(`${subject}\n${text}`).not.to.contain(' 75% of');
  });

  it('a test webhook event is dated the day it is sent', () => {
    for (const type of ['score_move', 'divergence_event'] as const) {
      const envelope = testEnvelope(type, new Date('2026-11-27T16:05:00Z'));
      expect(envelope.events[0]).to.include({ type, date: '2026-11-27', test: true });
      expect(envelope.sent_at).to.equal('2026-11-27T16:05:00.000Z');
    }
  });

  it("the errors page's coverage example is a listed ticker outside the 100 largest (TSLA is inside)", () => {
    const tickers = loadUsTickers();
    const rank = (s: string) => tickers.find((t) => t.symbol === s)?.size_rank;
    expect(rank(COVERAGE_EXAMPLE)).to.be.greaterThan(100);
    expect(rank('TSLA')).to.be.at.most(100);
  });

  describe('The file outbox', () => {
    const dir = tempDir('outbox-');
    after(() => rmSync(dir, { recursive: true, force: true }));
    const link = `http://127.0.0.1:45678/account/sign-in/${'Ab3_-'.repeat(9)}`;

    it('writes a long link on one line, the body unencoded (7bit for ASCII, 8bit otherwise), and says where', async () => {
      const written: string[] = [];
      const mailer = new FileOutboxMailer({ dir, clock: fixedClock('2026-11-27T12:00:00Z'), onWritten: (file) => written.push(file) });
      await mailer.send({ id: 'ascii-1', to: 'a@example.com', subject: 'Your sign-in link', text: `Follow this link to sign in:\n\n${link}\n\nIt works once.` });
      await mailer.send({ id: 'utf8-1', to: 'a@example.com', subject: 'Prix', text: `Suivez ce lien — il marche une fois :\n\n${link}\n` });
      await mailer.close();
      expect(written).to.deep.equal([mailer.fileFor('ascii-1'), mailer.fileFor('utf8-1')]);

      const ascii = readFileSync(mailer.fileFor('ascii-1'), 'utf8');
      expect(ascii).to.contain('\r\nContent-Transfer-Encoding: 7bit\r\n');
      expect(ascii).not.to.match(/quoted-printable/i);
      expect(ascii.split('\r\n')).to.include(link);
      expect(ascii.endsWith('\r\n\r\nFollow this link to sign in:\r\n\r\n' + link + '\r\n\r\nIt works once.\r\n')).to.equal(true);

      const utf8 = readFileSync(mailer.fileFor('utf8-1'), 'utf8');
      expect(utf8).to.contain('\r\nContent-Transfer-Encoding: 8bit\r\n');
      expect(utf8).to.contain('Suivez ce lien — il marche une fois :');
      expect(utf8.split('\r\n')).to.include(link);
    });
  });
});
