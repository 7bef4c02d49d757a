import { expect } from 'chai';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { invoices, invoicesProjection, type InvoiceDoc } from '../../projections/invoices/invoices.projection.js';
import { getInvoice, INVOICES_LISTED, listInvoices } from '../../queries/get-invoices/get-invoices.query.js';
import { AppError } from '../../src/core/errors.js';

/** An issued invoice as the invoices projection stores it. */
function invoiceDoc(account: string, code: string, seq: number, period: string): InvoiceDoc {
  const number = `${code}-${String(seq).padStart(4, '0')}`;
  return {
    account_id: account,
    number,
    period,
    invoice: { number, account_id: account, email: null, period, issued_at: `${period}-28T00:00:00.000Z`, currency: 'usd', lines: [], total_cents: 0, status: 'paid' },
    due_cents: 0,
    payment_ref: null,
  };
}

async function notFoundOf(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  return expect.fail('expected a 404');
}

describe('queries/get-invoices: an account’s invoices, one look-up per owner', () => {
  let db: SqliteDb;
  let reads: SqliteReadStore;
  // 30 months of invoices for A, two for B (numbered in B's own sequence).
  const months = Array.from({ length: 30 }, (_, i) => `${2022 + Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, '0')}`);
  const ofA = months.map((m, i) => invoiceDoc('acc_a', 'AAAA1111', i + 1, m));
  const ofB = [invoiceDoc('acc_b', 'BBBB2222', 1, '2024-01'), invoiceDoc('acc_b', 'BBBB2222', 2, '2024-02')];

  before(async () => {
    db = openSqlite(':memory:');
    reads = new SqliteReadStore(db);
    await reads.register(invoicesProjection.collections);
    const writes = [...ofA, ...ofB].map((doc) => ({ op: 'upsert' as const, collection: invoices.name, id: invoices.key(doc), doc }));
    await reads.commit({ writes, checkpoints: {} });
  });
  after(async () => {
    await reads.close();
    db.close();
  });

  it('lists the account’s own invoices, newest month first, the last 24', async () => {
    const listed = await listInvoices(reads, 'acc_a');
    expect(INVOICES_LISTED).to.equal(24);
    expect(listed.map((d) => d.period)).to.deep.equal([...months].reverse().slice(0, 24));
    expect(listed.every((d) => d.account_id === 'acc_a')).to.equal(true);
    expect((await listInvoices(reads, 'acc_b')).map((d) => d.number)).to.deep.equal(['BBBB2222-0002', 'BBBB2222-0001']);
    expect(await listInvoices(reads, 'acc_none')).to.deep.equal([]);
  });

  it('finds an invoice by its number for its owner', async () => {
    expect(await getInvoice(reads, 'acc_b', 'BBBB2222-0001')).to.deep.equal(ofB[0]);
  });

  it('answers another account’s invoice as one that does not exist: 404 not_found', async () => {
    const err = await notFoundOf(getInvoice(reads, 'acc_a', 'BBBB2222-0001'));
    expect([err.status, err.code, err.message]).to.deep.equal([404, 'not_found', 'No such invoice on this account']);
  });

  it('answers 404 to a number that is not an invoice number, or that no invoice has', async () => {
    for (const number of ['', 'bbbb2222-0001', 'BBBB2222-1', 'BBBB2222-0001.pdf', '../BBBB2222-0001', 'BBBB2222-0009']) {
      expect((await notFoundOf(getInvoice(reads, 'acc_b', number))).status, number).to.equal(404);
    }
  });
});
