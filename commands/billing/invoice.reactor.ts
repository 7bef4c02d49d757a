/**
 * Issues the invoice of every closed month still `pending` in the `invoice_months` read model,
 * a few seconds after its closing event reaches the read models. The invoice stream, not the read
 * model, decides whether a month was invoiced (`issueInvoice`), so a read model that lags or is
 * being rebuilt never issues a month twice.
 *
 * A month is closed by the account's first ledger decision after it; an account that makes none
 * would never be closed, nor billed. So once a month (at the first pass of each month, by the
 * clock) the issuer closes the finished months of every ledger still in an earlier one.
 *
 * Each pass also ends the dunning of the months whose grace is over (commands/billing/dunning.handler.ts).
 */
import type { Page } from '../../src/core/read-store.port.js';
import { startPeriodic } from '../../src/core/periodic.js';
import { invoiceMonths, invoicesProjection, type InvoiceMonthDoc } from '../../projections/invoices/invoices.projection.js';
import { issueInvoice, type InvoiceDeps } from './invoice.handler.js';
import { lapseOverdue } from './dunning.handler.js';
import { ledgerStates, usageProjection } from '../../projections/usage/usage.projection.js';
import { periodOf } from '../../src/domain/ledger/billing-period.js';
import type { Ledger } from '../../src/domain/ledger/ledger.commands.js';

export interface InvoiceIssuer {
  /** One pass now (after any pass in progress); resolves with the number of invoices issued. */
  drain(): Promise<number>;
  stop(): Promise<void>;
}

export const DEFAULT_INVOICE_INTERVAL_MS = 5_000;

export function startInvoiceIssuer(
  deps: InvoiceDeps & { ledger: Pick<Ledger, 'execute'>; intervalMs?: number; onError?(err: unknown, month?: InvoiceMonthDoc): void },
): InvoiceIssuer {
  let swept: string | null = null;

  /** Closes the finished months of idle ledgers, once a month. */
  async function sweep(): Promise<void> {
    const period = periodOf(deps.clock.now());
    if (swept === period) return;
    await deps.reads.register(usageProjection.collections);
    for await (const doc of deps.reads.scan(ledgerStates)) {
      if (periodic.stopped) return;
      if (doc.state.opened && doc.state.period !== null && doc.state.period < period) {
        await deps.ledger.execute(doc.account_id, { type: 'CloseFinishedMonths' }).catch((err: unknown) => deps.onError?.(err));
      }
    }
    swept = period;
  }

  async function pass(): Promise<number> {
    await sweep();
    await deps.reads.register(invoicesProjection.collections);
    let issued = 0;
    let cursor: string | null = null;
    do {
      const page: Page<InvoiceMonthDoc> = await deps.reads.find(invoiceMonths, { status: 'pending' }, { sort: [['account_id', 1], ['period', 1]], limit: 100, cursor });
      for (const month of page.items) {
        if (periodic.stopped) return issued;
        try {
          if ((await issueInvoice(deps, month.account_id, month.period)).issued) issued++;
        } catch (err) {
          deps.onError?.(err, month);
        }
      }
      cursor = page.nextCursor;
    } while (cursor);
    await lapseOverdue(deps, (err) => deps.onError?.(err));
    return issued;
  }

  const periodic = startPeriodic(pass, deps.intervalMs ?? DEFAULT_INVOICE_INTERVAL_MS, (err) => deps.onError?.(err));
  return periodic;
}
