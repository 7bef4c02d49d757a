/**
 * Issues a closed month's invoice: bills the month from the ledger (`billMonth`), charges what is
 * still due through the Billing port (`paid`, or `open` while a card processor collects it), and records `InvoiceIssued` on `invoices-<account_id>`,
 * numbered in the account's sequence. One invoice per month: issuing it again returns the one
 * issued (the decision is taken on the invoice stream, appended at its expected revision).
 */
import type { Billing } from '../../src/core/billing.port.js';
import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import { notFound } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { billMonth, type MonthBill } from '../../src/domain/billing/month-bill.js';
import type { Invoice } from '../../src/domain/billing/invoice.js';
import { invoicesStream } from '../../src/domain/billing/billing.events.js';
import { invoiceDecider } from '../../src/domain/billing/invoice.decider.js';
import { readLedgerMonth } from '../../projections/usage/ledger-month.js';
import { lineCount } from '../../src/domain/ledger/ledger.events.js';
import type { HeadSigner, LedgerHead } from '../../src/domain/ledger/ledger-head.js';
import { accountDecider } from '../../src/domain/accounts/account.decider.js';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { customerOf } from './customer.handler.js';

export interface InvoiceDeps {
  events: EventStore;
  reads: ReadStore;
  billing: Billing;
  clock: Clock;
  /** Signs the month's closing line on the invoice; without one the invoice carries no head. */
  signer?: HeadSigner | null;
}

/** The month's ledger events, from its first to its closing event, and the state before them. */
async function monthOfLedger(deps: InvoiceDeps, accountId: string, period: string) {
  const month = await readLedgerMonth(deps.reads, deps.events, accountId, period);
  if (!month) throw notFound(`account ${accountId} has no ledger month ${period}`);
  if (!month.closed) throw notFound(`ledger month ${period} of account ${accountId} is not closed yet`);
  // The closing event is one line, the month's last: its seq follows the lines of the events before it.
  const lines = month.events.reduce((n, e) => n + lineCount(e as never), 0);
  const closing: Omit<LedgerHead, 'at'> = { account_id: accountId, seq: month.firstSeq + lines - 1, hash: (month.events.at(-1)!.data as { hash: string }).hash };
  return { ...month, closing };
}

/**
 * Charges the month's bill through the Billing port, every line as billed: the processor's
 * invoice carries the same lines and total, what was paid when bought credited against it.
 */
async function chargeBill(deps: InvoiceDeps, accountId: string, bill: MonthBill): Promise<{ payment_ref: string | null; paid: boolean }> {
  if (bill.total_cents === 0) return { payment_ref: null, paid: true };
  const customer_ref = await customerOf(deps, accountId);
  const { period, lines, total_cents, paid_cents } = bill;
  return deps.billing.chargeInvoice({ account_id: accountId, customer_ref, period, lines, total_cents, paid_cents, idempotency_key: `invoice:${period}` });
}

/** The month's invoice, issued now unless it was already (`issued` says which). */
export async function issueInvoice(deps: InvoiceDeps, accountId: string, period: string): Promise<{ invoice: Invoice; issued: boolean }> {
  const existing = (await foldStream(deps.events, invoiceDecider, invoicesStream(accountId))).state.issued.get(period);
  if (existing) return { invoice: existing, issued: false };
  const { before, events, closing } = await monthOfLedger(deps, accountId, period);
  const bill = billMonth(period, before, events);
  const { email } = (await foldStream(deps.events, accountDecider, accountStream(accountId))).state;
  const charged = await chargeBill(deps, accountId, bill);
  const at = deps.clock.now().toISOString();
  const invoice: Omit<Invoice, 'number'> = {
    account_id: accountId,
    email,
    period,
    issued_at: at,
    currency: 'usd',
    lines: bill.lines,
    total_cents: bill.total_cents,
    status: charged.paid ? 'paid' : 'open',
    ...(deps.signer ? { ledger_head: deps.signer.sign({ ...closing, at }) } : {}),
  };
  const command = { type: 'IssueInvoice' as const, invoice, due_cents: bill.due_cents, payment_ref: charged.payment_ref };
  const issued = await handleCommand(deps.events, invoiceDecider, invoicesStream(accountId), command, deps.clock);
  return { invoice: issued.state.issued.get(period)!, issued: issued.events.length > 0 };
}
