/**
 * A month's bill, from the ledger alone: what its invoice lists and, while the month is still
 * open, its upcoming invoice (the same code). The month's own events (from the state it opened on
 * to its closing event, or to the last one so far) say which plan and membership it started with
 * (billed for the whole month, in arrears), what was prorated and which packs were sold (already
 * paid when bought), and the overage its last state carries.
 */
import { evolve, type LedgerState } from '../ledger/ledger.state.js';
import type { LedgerEvent } from '../ledger/ledger.events.js';
import { tierName as title, type Tier } from '../plans.js';
import { PRO_MONTHLY_PRICE_CENTS, monthlyPriceCents } from '../ledger/proration.js';
import { monthName, type InvoiceLine } from './invoice.js';

export interface MonthBill {
  period: string;
  lines: InvoiceLine[];
  total_cents: number;
  /** Paid when bought (prorations, packs). */
  paid_cents: number;
  /** Still to pay when the invoice is issued (plan, membership, overage). */
  due_cents: number;
}

const line = (kind: InvoiceLine['kind'], description: string, amount: number, quantity = 1): InvoiceLine => ({
  kind,
  description,
  quantity,
  unit_amount_cents: quantity === 0 ? 0 : Math.round(amount / quantity),
  amount_cents: amount,
});

/**
 * The bill of `period` from `before` (the state before the month's first event) and the month's
 * events, the last one its `LedgerPeriodClosed`. Throws when the events do not close the month.
 */
export function billMonth(period: string, before: LedgerState, events: readonly LedgerEvent[]): MonthBill {
  const closing = events[events.length - 1];
  if (closing?.type !== 'LedgerPeriodClosed' || closing.data.period !== period) throw new Error(`the events given do not end with the closing of ${period}`);
  return billSoFar(period, before, events);
}

/**
 * The bill of `period` as its events so far make it: the upcoming invoice of a month still open,
 * and (once the closing event is among them) the invoice itself. The overage is the state's after
 * the last event, which for a closed month is what its closing event carries.
 */
export function billSoFar(period: string, before: LedgerState, events: readonly LedgerEvent[]): MonthBill {
  let state = before;
  let opening: { tier: Tier; pro: boolean } | null = null;
  const bought: InvoiceLine[] = [];
  for (const e of events) {
    state = evolve(state, e);
    // The month starts on the plan it opened with (after a fall-back due at its start).
    if (e.type === 'AllowancePeriodOpened' && e.data.period === period) opening = { tier: state.tier, pro: state.pro };
    if (e.type === 'ProrationCharged') {
      const what = e.data.kind === 'pro' ? 'Pro membership' : `Upgrade from ${title(e.data.from as Tier)} to ${title(e.data.to as Tier)}`;
      bought.push(line('proration', `${what}, ${e.data.days} of ${e.data.days_in_month} days from ${e.data.at.slice(0, 10)}`, e.data.amount_cents));
    }
    if (e.type === 'PackPurchased' && typeof e.data.price_cents === 'number') {
      bought.push(line('pack', `Credit pack: ${e.data.credits.toLocaleString('en-US')} credits`, e.data.price_cents));
    }
  }
  const start = opening ?? { tier: before.tier, pro: before.pro };
  const lines: InvoiceLine[] = [];
  const price = monthlyPriceCents(start.tier);
  lines.push(line('plan', `${title(start.tier)} plan, ${monthName(period)}${price === null ? ' (billed by contract)' : ''}`, price ?? 0));
  if (start.pro) lines.push(line('pro', `Pro membership, ${monthName(period)}`, PRO_MONTHLY_PRICE_CENTS));
  lines.push(...bought);
  if (state.period === period && state.overage_credits > 0) {
    const cents = Math.round(state.overage_micro_usd / 10_000);
    lines.push(line('overage', `Overage: ${state.overage_credits.toLocaleString('en-US')} credits beyond the allowance`, cents));
  }
  const total = lines.reduce((n, l) => n + l.amount_cents, 0);
  const paid = bought.reduce((n, l) => n + l.amount_cents, 0);
  return { period, lines, total_cents: total, paid_cents: paid, due_cents: total - paid };
}
