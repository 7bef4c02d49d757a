/**
 * The card processor's side of an account, decided on the write side so that two replicas agree:
 * - `payments-<account_id>`: the account's customer at the processor, linked once (two replicas
 *   creating it at the same moment get the same one from the processor's idempotency key; a
 *   second link, whatever it names, adds nothing: the first stays);
 * - `processor-event-<processor>-<id>`: each event the processor reported, recorded once by its
 *   id (appended at the revision read: of two replicas recording it at once, one writes it and
 *   the other, deciding again, finds it recorded).
 */
import type { Decider } from '../../core/decider.js';
import type { ProcessorCustomerLinked, ProcessorEventRecorded } from './billing.events.js';

export type LinkCustomer = { type: 'LinkCustomer'; processor: string; customer_ref: string };

export const customerDecider: Decider<{ customer_ref: string | null }, LinkCustomer, ProcessorCustomerLinked> = {
  initialState: () => ({ customer_ref: null }),
  evolve: (s, e) => (s.customer_ref === null ? { customer_ref: e.data.customer_ref } : s),
  decide: (s, c, now) => (s.customer_ref !== null ? [] : [{ type: 'ProcessorCustomerLinked', data: { processor: c.processor, customer_ref: c.customer_ref, at: now.toISOString() } }]),
};

export type RecordProcessorEvent = { type: 'RecordProcessorEvent'; processor: string; event_id: string; event_type: string; account_id: string | null; outcome: string };

export const processorEventDecider: Decider<{ recorded: ProcessorEventRecorded['data'] | null }, RecordProcessorEvent, ProcessorEventRecorded> = {
  initialState: () => ({ recorded: null }),
  evolve: (s, e) => s.recorded ? s : { recorded: e.data },
  decide(s, c, now) {
    if (s.recorded) return [];
    const { processor, event_id, event_type, account_id, outcome } = c;
    return [{ type: 'ProcessorEventRecorded', data: { processor, event_id, event_type, account_id, outcome, at: now.toISOString() } }];
  },
};
