import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { issueInvoice } from '../../commands/billing/invoice.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { exportLedger } from '../../queries/audit-ledger/ledger-month.query.js';
import { auditAccount } from '../../queries/audit-ledger/audit-ledger.query.js';
import { auditInvoiceHeads } from '../../queries/audit-ledger/audit-against-head.query.js';
import { rewriteLedger } from '../support/ledger-rewrite.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { fixedClock } from '../../src/core/clock.js';
import { verifySignedHead } from '../../src/domain/ledger/ledger-head.js';
import { tempDir, testEnv } from '../support/server.js';

describe("An invoice carries its month's closing line, signed", function () {
  this.timeout(60_000);
  const dir = tempDir('scores-invoice-head-');
  const clock = fixedClock('2024-04-10T12:00:00Z');
  let s: Services;
  let account = '';
  let requests = 0;
  const debit = (account: string) => s.ledger.debit(account, { request_id: `req_head_${++requests}`, endpoint: 'scores', channel: 'rest', cost: 1 });

  before(async () => {
    // The rewrite tool edits the log's JSON form of a debit (see test/e2e/ledger-rewrite.test.ts).
    s = await openServices(loadConfig(testEnv(dir, '2024-04-10T12:00:00Z', { SCORES_DEMO: 'off', SCORES_LOG_DEBITS: 'events' })), { clock });
    await s.runner.start();
  });
  after(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs the LedgerPeriodClosed line at the instant of issue, with the published key', async () => {
    account = (await createAccountWithKey(s, { tier: 'hobbyist' })).account_id;
    await s.ledger.execute(account, { type: 'PurchasePack', data: { pack_id: 'pack-10k', credits: 10_000 } });
    for (let i = 0; i < 3; i++) await debit(account);
    clock.set('2024-05-02T00:00:00Z');
    await debit(account); // closes April
    await s.runner.waitForHead();
    clock.set('2024-05-02T00:00:05Z');
    const { invoice } = await issueInvoice({ events: s.events, reads: s.reads, billing: s.billing, clock, signer: s.keyring.signer }, account, '2024-04');

    const lines = await exportLedger({ events: s.events, reads: s.reads, accountId: account });
    const closing = lines.find((l) => l.kind === 'LedgerPeriodClosed' && l.data['period'] === '2024-04')!;
    expect(invoice.ledger_head).to.include({ account_id: account, seq: closing.seq, hash: closing.hash, at: invoice.issued_at, key_id: s.keyring.signer!.keyId });
    expect(verifySignedHead(invoice.ledger_head, s.keyring.keys)).to.deep.include({ ok: true });
    // The head is kept with the invoice in the log: the same invoice again is the one issued.
    const again = await issueInvoice({ events: s.events, reads: s.reads, billing: s.billing, clock, signer: s.keyring.signer }, account, '2024-04');
    expect(again).to.deep.equal({ invoice, issued: false });
  });

  it('lets plain `scores audit` catch a rewrite of the invoiced month that recomputed every hash', async () => {
    const deps = { events: s.events, reads: s.reads, keys: s.keyring.keys, accountId: account };
    expect(await auditInvoiceHeads(deps)).to.deep.equal({ ok: true, checked: 1, problems: [] });
    await s.close();
    rewriteLedger(s.config.sqliteFile, account, (type, data) => {
      if (type !== 'PackPurchased') return false;
      data['credits'] = 1_000_000;
      return true;
    });
    s = await openServices(loadConfig(testEnv(dir, '2024-05-02T00:00:05Z', { SCORES_DEMO: 'off', SCORES_LOG_DEBITS: 'events' })), { clock });
    await s.runner.replay();
    const after = { ...deps, events: s.events, reads: s.reads };
    expect((await auditAccount(after)).chain).to.equal(null); // the hashes alone hold
    const heads = await auditInvoiceHeads(after);
    expect(heads).to.include({ ok: false, checked: 1 });
    expect(heads.problems[0]).to.match(/^Invoice [A-Z0-9]+-0001: line \d+ of the log no longer has the hash signed on it at 2024-05-02T00:00:05.000Z/);
  });
});
