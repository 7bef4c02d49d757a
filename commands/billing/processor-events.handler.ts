/**
 * What a card processor reports (its verified webhooks, as ProcessorEvents), turned into the
 * ledger's and the invoices' own commands, each event once:
 * - a purchase paid on the processor's page is recorded as the page records one paid at once
 *   (an upgrade, the Pro membership, a pack); a purchase the ledger refuses is refunded;
 * - an invoice paid ends its dunning; an invoice whose payment failed starts it (once; an email
 *   says so); a subscription cancelled in the processor's portal cancels the plan at the month's end.
 *
 * "Once" is decided on the write side: the event is looked up on its own stream first (a repeat
 * is answered as recorded, changing nothing), and every effect is itself idempotent (a pack's
 * purchase reference, an upgrade's payment reference, the invoice decider), so two replicas
 * handling the same event at the same moment change the ledger once; the event's record is
 * appended at the revision read, so only one of them records it.
 */
import type { Logger } from 'pino';
import type { Billing, ProcessorEvent, ProcessorNotice } from '../../src/core/billing.port.js';
import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import { AppError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Mailer } from '../../src/core/mail.port.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import { accountDecider } from '../../src/domain/accounts/account.decider.js';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { invoicesStream, processorEventStream } from '../../src/domain/billing/billing.events.js';
import { DUNNING_GRACE_DAYS } from '../../src/domain/billing/dunning.js';
import { invoiceDecider } from '../../src/domain/billing/invoice.decider.js';
import { monthName } from '../../src/domain/billing/invoice.js';
import { processorEventDecider } from '../../src/domain/billing/payments.decider.js';
import type { Ledger } from '../../src/domain/ledger/ledger.commands.js';
import { recordPaid } from './billing.handler.js';

export interface ProcessorEventDeps {
  events: EventStore;
  ledger: Ledger;
  billing: Billing;
  clock: Clock;
  mailer: Mailer;
  personal: PersonalData;
  log: Logger;
}

/** `recorded`: this call recorded the event (false: it was already, here or on another replica). */
export async function handleProcessorEvent(deps: ProcessorEventDeps, event: ProcessorEvent): Promise<{ recorded: boolean; outcome: string }> {
  const processor = deps.billing.processor ?? 'processor';
  const stream = processorEventStream(processor, event.id);
  const seen = (await foldStream(deps.events, processorEventDecider, stream)).state.recorded;
  if (seen) return { recorded: false, outcome: seen.outcome };
  const outcome = await apply(deps, event.notice);
  const command = { type: 'RecordProcessorEvent' as const, processor, event_id: event.id, event_type: event.type, account_id: event.notice.account_id, outcome };
  const { events } = await handleCommand(deps.events, processorEventDecider, stream, command, deps.clock);
  return { recorded: events.length > 0, outcome };
}

async function apply(deps: ProcessorEventDeps, notice: ProcessorNotice): Promise<string> {
  switch (notice.kind) {
    case 'purchase_paid':
      return purchasePaid(deps, notice);
    case 'invoice_paid': {
      const { events } = await handleCommand(deps.events, invoiceDecider, invoicesStream(notice.account_id), { type: 'RecordInvoicePaid', period: notice.period, payment_ref: notice.payment_ref }, deps.clock);
      return events.length > 0 ? 'invoice_paid' : 'invoice_already_paid';
    }
    case 'invoice_payment_failed':
      return paymentFailed(deps, notice);
    case 'subscription_cancelled':
      return cancelPlan(deps, notice.account_id);
    case 'ignored':
      return 'ignored';
  }
}

async function purchasePaid(deps: ProcessorEventDeps, notice: Extract<ProcessorNotice, { kind: 'purchase_paid' }>): Promise<string> {
  try {
    // Recorded now or by a replica handling the same purchase at the same moment: the ledger holds it once either way.
    await recordPaid(deps, notice.account_id, notice.purchase, notice.payment_ref);
    return `${notice.purchase.kind}_recorded`;
  } catch (err) {
    // recordPaid has given the payment back; a refusal is the event's outcome, not a failure to retry.
    if (err instanceof AppError && err.status < 500) return `refunded: ${err.code}`;
    throw err;
  }
}

async function cancelPlan(deps: ProcessorEventDeps, accountId: string): Promise<string> {
  try {
    const { events } = await deps.ledger.execute(accountId, { type: 'CancelPlan' });
    return events.length > 0 ? 'plan_cancelled_at_month_end' : 'plan_cancellation_already_scheduled';
  } catch (err) {
    if (err instanceof AppError && err.code === 'bad_request') return 'plan_already_free';
    throw err;
  }
}

/** Dunning starts with the first failure; the replica whose append recorded it sends the email. */
async function paymentFailed(deps: ProcessorEventDeps, notice: Extract<ProcessorNotice, { kind: 'invoice_payment_failed' }>): Promise<string> {
  const command = { type: 'RecordPaymentFailed' as const, period: notice.period, payment_ref: notice.payment_ref };
  const { events } = await handleCommand(deps.events, invoiceDecider, invoicesStream(notice.account_id), command, deps.clock);
  const failed = events.find((e) => e.type === 'InvoicePaymentFailed');
  if (!failed) return 'dunning_continues';
  await sendDunningMail(deps, notice.account_id, notice.period, failed.data.grace_until).catch((err: unknown) => deps.log.warn({ err, account_id: notice.account_id }, 'dunning email not sent; the account page says it'));
  return 'dunning_started';
}

async function sendDunningMail(deps: ProcessorEventDeps, accountId: string, period: string, graceUntil: string): Promise<void> {
  const sealed = (await foldStream(deps.events, accountDecider, accountStream(accountId))).state.email;
  if (sealed === null) return;
  const to = await deps.personal.open(accountId, sealed, 'email');
  if (!to) return;
  await deps.mailer.send({
    id: `dunning-${accountId}-${period}`,
    to,
    subject: `We could not collect your invoice for ${monthName(period)}`,
    text: [
      `The payment of your invoice for ${monthName(period)} failed.`,
      '',
      `Update your card from the account page ("Manage cards, invoices and cancellation") by ${graceUntil.slice(0, 10)} (${DUNNING_GRACE_DAYS} days).`,
      'Otherwise your plan falls back to Free at the end of that month. Your prepaid credits, and the credits of this month, stay yours.',
    ].join('\n'),
  });
}
