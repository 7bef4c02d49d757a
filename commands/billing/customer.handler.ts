/**
 * The account's customer at the card processor: created the first time a payment needs it, and
 * recorded on `payments-<account_id>` so that every later payment, invoice and portal session of
 * the account names the same one. Two replicas creating it at once are given the same customer by
 * the processor (the creation's idempotency key is the account id), and the first link stays.
 */
import type { Billing } from '../../src/core/billing.port.js';
import type { Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { paymentsStream } from '../../src/domain/billing/billing.events.js';
import { customerDecider } from '../../src/domain/billing/payments.decider.js';

export interface CustomerDeps {
  events: EventStore;
  billing: Billing;
  clock: Clock;
}

/** The account's customer reference, created now if it has none; null with a billing that keeps no customers. */
export async function customerOf(deps: CustomerDeps, accountId: string): Promise<string | null> {
  const processor = deps.billing.processor;
  if (processor === null) return null;
  const linked = (await foldStream(deps.events, customerDecider, paymentsStream(accountId))).state.customer_ref;
  if (linked !== null) return linked;
  const created = await deps.billing.createCustomer(accountId);
  if (created === null) return null;
  const { state } = await handleCommand(deps.events, customerDecider, paymentsStream(accountId), { type: 'LinkCustomer', processor, customer_ref: created }, deps.clock);
  return state.customer_ref;
}
