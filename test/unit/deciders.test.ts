import { expect } from 'chai';
import { deciderSpec } from '../support/decider-spec.js';
import type { Decision } from '../../src/core/decider.js';
import { accountStreamsDecider } from '../../src/domain/accounts/account-opening.decider.js';
import { emailClaimDecider } from '../../src/domain/accounts/email-claim.js';
import { redeemLinkDecider, sessionDecider, signInLinkDecider } from '../../src/domain/accounts/sign-in.decider.js';
import { invoiceDecider } from '../../src/domain/billing/invoice.decider.js';
import { exportDownloadDecider } from '../../src/domain/exports/export-download.decider.js';
import { ledgerBatchDecider } from '../../src/domain/ledger/ledger.decider.js';
import { mailDecider } from '../../src/domain/mail/mail.decider.js';
import { ingestDecider } from '../../src/domain/scores/ingest.decider.js';
import { registrationDecider } from '../../src/domain/webhooks/webhook-registry.decider.js';
import { webhookWithRegistryDecider } from '../../src/domain/webhooks/webhook.decider.js';
import { compositeScore } from '../../src/domain/composite.js';
import { demoPublicationDecider } from '../../commands/seed-demo/demo-publication.decider.js';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';

const now = new Date('2024-03-01T12:00:00.000Z');
const at = now.toISOString();
/** A decision's events per stream, `events` under `first`. */
const streamsOf = (d: unknown, first = 'first'): Record<string, string[]> => {
  const x = d as Decision<unknown, { type: string }, unknown>;
  const out: Record<string, string[]> = { [first]: x.events.map((e) => e.type) };
  for (const w of x.writes ?? []) out[w.streamId] = w.events.map((e) => e.type);
  return out;
};

describe('The deciders of each write path', () => {
  describe('An address claim', () => {
    const claim = { type: 'ClaimEmail' as const, data: { email: 'pii:x', account_id: 'acct_b', at } };
    it('is taken by the first account and refused to a second', () => {
      deciderSpec(emailClaimDecider).given([]).when(claim, now).then([{ type: 'EmailClaimed', data: claim.data }]);
      deciderSpec(emailClaimDecider).given([{ type: 'EmailClaimed', data: { ...claim.data, account_id: 'acct_a' } }]).when(claim, now).then([]);
    });
  });

  describe('Sign-in links and sessions', () => {
    const data = { email: 'pii:x', account_id: 'acct_a', expires_at: '2024-03-01T12:15:00.000Z', at };
    it('sends a link once under its token', () => {
      deciderSpec(signInLinkDecider).given([]).when({ type: 'SendLink', data }, now).then([{ type: 'SignInLinkSent', data }]);
      deciderSpec(signInLinkDecider).given([{ type: 'SignInLinkSent', data }]).when({ type: 'SendLink', data }, now).thenThrows('conflict');
    });

    it('ends a started session once', () => {
      const started = { type: 'SessionStarted' as const, data: { account_id: 'acct_a', expires_at: '2024-03-08T12:00:00.000Z', at } };
      deciderSpec(sessionDecider).given([started]).when({ type: 'EndSession' }, now).then([{ type: 'SessionEnded', data: { reason: 'signed_out', at } }]);
      deciderSpec(sessionDecider).given([started, { type: 'SessionEnded', data: { reason: 'signed_out', at } }]).when({ type: 'EndSession' }, now).then([]);
    });

    it('signs in with a valid link, opening the account, its ledger and the session in one decision; a used link is refused', () => {
      const sent = { type: 'SignInLinkSent', data, streamId: 'signin-h' };
      const command = { type: 'RedeemLink' as const, session_stream: 'session-s', session_days: 7, key: { key_id: 'key_1', key_hash: 'h', prefix: 'sk_' }, opening: now };
      const redeemed = redeemLinkDecider.decide(redeemLinkDecider.evolve(redeemLinkDecider.initialState(), sent as never), command, now);
      expect(streamsOf(redeemed, 'signin-h')).to.deep.equal({
        'signin-h': ['SignInLinkUsed'],
        'session-s': ['SessionStarted'],
        'account-acct_a': ['AccountCreated', 'ApiKeyIssued'],
        'ledger-acct_a': ['LedgerOpened', 'AllowancePeriodOpened'],
      });
      deciderSpec(redeemLinkDecider).given([sent, { type: 'SignInLinkUsed', data: { account_id: 'acct_a', created: true, at }, streamId: 'signin-h' }] as never[]).when(command, now).thenThrows('not_found');
    });
  });

  describe('An account opened by keys create', () => {
    it('writes the account, its ledger and the claim of its address together, and frees the claim when forgotten', () => {
      const open = { type: 'OpenAccount' as const, account_id: 'acct_a', email: 'pii:x', key: { key_id: 'key_1', key_hash: 'h', prefix: 'sk_' }, tier: 'free' as const, pro: false, claim_stream: 'email-e' };
      const opened = accountStreamsDecider.decide(accountStreamsDecider.initialState(), open, now);
      expect(streamsOf(opened, 'account-acct_a')).to.deep.equal({ 'account-acct_a': ['AccountCreated', 'ApiKeyIssued'], 'ledger-acct_a': ['LedgerOpened', 'AllowancePeriodOpened'], 'email-e': ['EmailClaimed'] });
      const history = [
        { type: 'AccountCreated', data: { account_id: 'acct_a', email: 'pii:x', at }, streamId: 'account-acct_a' },
        { type: 'EmailClaimed', data: { email: 'pii:x', account_id: 'acct_a', at }, streamId: 'email-e' },
      ];
      deciderSpec(accountStreamsDecider).given(history as never[]).when({ type: 'ForgetAccount', account_id: 'acct_a', claim_stream: 'email-e' }, now).then([{ type: 'AccountForgotten', data: { account_id: 'acct_a', at } }]);
    });
  });

  describe('Invoices', () => {
    const invoice = { account_id: 'acct_1a2b3c4d', email: null, period: '2024-02', issued_at: at, currency: 'usd' as const, lines: [], total_cents: 0, status: 'paid' as const };
    it('numbers a month in the account sequence, once', () => {
      const issue = { type: 'IssueInvoice' as const, invoice, due_cents: 0, payment_ref: null };
      const [issued] = deciderSpec(invoiceDecider).given([]).when(issue, now).then([{ type: 'InvoiceIssued', data: { invoice: { number: '1A2B3C4D-0001', ...invoice }, due_cents: 0, payment_ref: null, at } }]);
      deciderSpec(invoiceDecider).given([issued!]).when(issue, now).then([]);
    });
  });

  describe('Usage-alert mail', () => {
    it('records an alert emailed once', () => {
      const emailed = { type: 'UsageAlertEmailed' as const, data: { alert_event_id: 'e1', to: 'pii:x', at } };
      deciderSpec(mailDecider).given([]).when(emailed, now).then([emailed]);
      deciderSpec(mailDecider).given([emailed]).when(emailed, now).then([]);
    });
  });

  describe('Download records', () => {
    it('writes each download to the account stream, decided on nothing', () => {
      const data = { account_id: 'acct_a', key_id: 'key_1', request_id: 'r', run_id: 'b', name: 'scores.csv.gz', status: 200, range: null, bytes_sent: 10, complete: true, at };
      deciderSpec(exportDownloadDecider).given([]).when({ type: 'RecordDownload', data } as never, now).then([]);
      expect(streamsOf(exportDownloadDecider.decide(null, { type: 'RecordDownload', data } as never, now))).to.deep.equal({ first: [], 'export-downloads-acct_a': ['ExportDownloaded'] });
    });
  });

  describe('Ingest', () => {
    it('publishes new scores and restates changed ones, on the values folded so far', () => {
      const held = { type: 'ScoresPublished', streamId: 'scores-2024-02-29', data: { date: '2024-02-29', published_at: at, rows: [{ ticker: 'AAPL', main_street: 50, wall_street: 40, service_score: compositeScore(50, 40), estimated: false }] } };
      const batch = { type: 'IngestBatch' as const, streams: [{ kind: 'score' as const, streamId: 'scores-2024-02-29', date: '2024-02-29', rows: [{ ticker: 'AAPL', main_street: 51, wall_street: 40, estimated: false }, { ticker: 'MSFT', main_street: 50, wall_street: 40, estimated: false }] }] };
      deciderSpec(ingestDecider).given([held] as never[]).when(batch, now).then([]);
      const decided = ingestDecider.decide(ingestDecider.evolve(ingestDecider.initialState(), held as never), batch, now);
      expect(streamsOf(decided)).to.deep.equal({ first: [], 'scores-2024-02-29': ['ScoresPublished', 'ScoresRestated'] });
      expect((decided as Decision<unknown, never, unknown>).result).to.deep.equal({ written: 2, unchanged: 0 });
    });
  });

  describe('The ledger batch', () => {
    it('decides each queued command on the state the previous left, a refusal changing nothing', () => {
      const open = { type: 'OpenLedger' as const, data: { account_id: 'acct_a', tier: 'free' as const, pro: false } };
      const decided = ledgerBatchDecider.decide(ledgerBatchDecider.initialState(), [open, { type: 'SetPlan', data: { tier: 'nonsense' as never } }], now);
      expect((decided as Decision<unknown, unknown, { ok: boolean }[]>).result!.map((o) => o.ok)).to.deep.equal([true, false]);
      deciderSpec(ledgerBatchDecider, { normalize: (e) => e.type }).given([]).when([open], now).then(['LedgerOpened', 'AllowancePeriodOpened']);
    });
  });

  describe('Webhooks over the registry', () => {
    it('starts a registered webhook on its own stream, and frees a deleted one on the registry', () => {
      const register = { type: 'RegisterWebhook' as const, account_id: 'acct_a', event_type: 'score_move', url: 'https://example.com/hook', secret: 'pii:s' };
      const registered = registrationDecider.decide(registrationDecider.initialState(), register, now);
      expect(streamsOf(registered)).to.deep.equal({ first: ['WebhookIdAssigned'], 'webhook-1': ['WebhookRegistered'] });
      const own = (registered as Decision<unknown, never, unknown>).writes![0]!.events;
      const deleted = webhookWithRegistryDecider.decide(own.reduce((s, e) => webhookWithRegistryDecider.evolve(s, e as never), webhookWithRegistryDecider.initialState()), { type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 1 }, now);
      expect(streamsOf(deleted)).to.deep.equal({ first: ['WebhookDeleted'], 'webhook-registry': ['WebhookIdReleased'] });
      deciderSpec(registrationDecider).given([]).when(register, now).then([{ type: 'WebhookIdAssigned', data: { webhook_id: 1, account_id: 'acct_a', at } }]);
      deciderSpec(webhookWithRegistryDecider).given(own as never[]).when({ type: 'DeleteWebhook', account_id: 'acct_a', webhook_id: 1 }, now).then([{ type: 'WebhookDeleted', data: { webhook_id: 1, at } }]);
    });
  });

  describe('The demo seed', () => {
    it('writes the next chunk after the marker with the next marker, and nothing once it is through', () => {
      const dataset = new DemoDataset();
      const until = new Date('2019-01-03T23:00:00Z');
      const command = { type: 'PublishDemo' as const, dataset, until, chunkSize: 5 };
      const due = dataset.appendsBetween(null, until);
      const decided = demoPublicationDecider.decide(null, command, now) as Decision<unknown, never, { chunk: unknown[]; remaining: number }>;
      const chunk = decided.result!.chunk.length;
      expect(chunk).to.be.at.least(5);
      expect(decided.result!.remaining).to.equal(due.length - chunk);
      expect(decided.writes!.map((w) => w.streamId)).to.deep.equal(due.slice(0, chunk).map((a) => a.streamId));
      const marker = { type: 'DemoPublishedThrough' as const, data: { through: due[chunk - 1]!.at, appends: chunk } };
      deciderSpec(demoPublicationDecider).given([]).when(command, now).then([marker]);
      deciderSpec(demoPublicationDecider).given([{ type: 'DemoPublishedThrough', data: { through: due.at(-1)!.at, appends: due.length } }]).when(command, now).then([]);
    });
  });
});
