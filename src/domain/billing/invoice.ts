import type { SignedLedgerHead } from '../ledger/ledger-head.js';

/**
 * An invoice: what an account is billed for one calendar month (UTC), issued once the month is
 * closed (the ledger's `LedgerPeriodClosed`) and immutable from then on. Amounts are whole US
 * cents; `total_cents` is the sum of the lines' `amount_cents`.
 */
export type InvoiceLineKind = 'plan' | 'proration' | 'pro' | 'pack' | 'overage';

export interface InvoiceLine {
  kind: InvoiceLineKind;
  /** One line of text, e.g. "Hobbyist plan, 2026-11" or "Upgrade free → hobbyist, 21 of 30 days". */
  description: string;
  quantity: number;
  /** Price of one unit, cents (a prorated line: the prorated amount, quantity 1). */
  unit_amount_cents: number;
  /** quantity × unit_amount_cents, cents. */
  amount_cents: number;
}

export interface Invoice {
  /** Unique and sequential per account, e.g. `ACC1A2B3C-0001`. */
  number: string;
  account_id: string;
  /** The account's email when the invoice was issued, sealed under the account's key as the log holds it (null when it has none). */
  email: string | null;
  /** `YYYY-MM` billed. */
  period: string;
  /** ISO instant it was issued. */
  issued_at: string;
  currency: 'usd';
  lines: InvoiceLine[];
  total_cents: number;
  /**
   * `paid` once what was due is collected (the embedded billing: always, at issue); `open` while a
   * card processor is still collecting it (dunning: docs/billing.md, "Stripe"). Only this changes
   * after the issue, by `InvoicePaid`; the lines and total never do.
   */
  status: 'paid' | 'open';
  /**
   * The month's closing line (`LedgerPeriodClosed`), signed when the invoice was issued: the
   * ledger it bills, up to that line (docs/ledger.md, "Signed heads"). Absent on invoices issued
   * before heads were signed, or by a process without a signing key.
   */
  ledger_head?: SignedLedgerHead;
}

export { formatUsd } from '../ledger/proration.js';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** `2026-11` → `November 2026`. */
export function monthName(period: string): string {
  const [year, month] = period.split('-');
  return `${MONTHS[Number(month) - 1] ?? month} ${year}`;
}
