/**
 * The end of dunning's grace (src/domain/billing/dunning.ts): a month's invoice still unpaid when
 * its grace is over cancels the plan from the month's end, as `plan cancel` does; the packs bought,
 * the credits already granted and the Pro membership paid for stay. Run by the invoice issuer's pass.
 */
import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import { AppError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { invoicesStream } from '../../src/domain/billing/billing.events.js';
import { inDunning, invoiceDecider } from '../../src/domain/billing/invoice.decider.js';
import type { Ledger } from '../../src/domain/ledger/ledger.commands.js';
import { invoicePayments, invoicesProjection } from '../../projections/invoices/invoices.projection.js';

export interface DunningDeps {
  events: EventStore;
  reads: ReadStore;
  clock: Clock;
  ledger: Pick<Ledger, 'execute'>;
}

/** Lapses one month's dunning if its grace is over and it is still unpaid (decided on the invoice stream); true when it did. */
export async function lapseDunning(deps: DunningDeps, accountId: string, period: string): Promise<boolean> {
  const now = deps.clock.now().toISOString();
  const payment = (await foldStream(deps.events, invoiceDecider, invoicesStream(accountId))).state.payments.get(period);
  if (!inDunning(payment) || payment!.failed!.grace_until > now) return false;
  await deps.ledger.execute(accountId, { type: 'CancelPlan' }).catch((err: unknown) => {
    // Already free: nothing to cancel, the dunning still lapses.
    if (!(err instanceof AppError && err.code === 'bad_request')) throw err;
  });
  const { events } = await handleCommand(deps.events, invoiceDecider, invoicesStream(accountId), { type: 'LapseDunning', period }, deps.clock);
  return events.length > 0;
}

/** Every month in dunning whose grace is over, lapsed; answers how many. */
export async function lapseOverdue(deps: DunningDeps, onError?: (err: unknown) => void): Promise<number> {
  await deps.reads.register(invoicesProjection.collections);
  const now = deps.clock.now().toISOString();
  const failing = await deps.reads.find(invoicePayments, { status: 'failing' }, { sort: [['account_id', 1], ['period', 1]], limit: 500 });
  let lapsed = 0;
  for (const doc of failing.items.filter((d) => d.grace_until <= now)) {
    try {
      if (await lapseDunning(deps, doc.account_id, doc.period)) lapsed++;
    } catch (err) {
      onError?.(err);
    }
  }
  return lapsed;
}
