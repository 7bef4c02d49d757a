import type { Services } from '../container.js';
import { costOf, type RateKey } from '../../domain/rate-card.js';
import { creditsRemainingHeader } from '../../domain/ledger/ledger.figures.js';
import type { Channel } from '../../events/ledger.events.js';
import type { Principal } from './authentication.js';

export const CREDITS_HEADER = 'X-Credits-Remaining';

export interface Charge {
  cost: number;
  /** The `X-Credits-Remaining` value after the charge. */
  remaining: string;
}

/**
 * Charges a call once its result is known: the cost comes from the rate card and the number of
 * rows it returns. Resolves only when the debit is durable in the ledger; a call the credits do
 * not cover is refused with 429 `credits_exhausted` and charged nothing.
 */
export async function charge(services: Services, principal: Principal, endpoint: RateKey, quantity: number, channel: Channel): Promise<Charge> {
  const cost = costOf(endpoint, quantity);
  const outcome = await services.ledger.debit(principal.account_id, { request_id: principal.request_id, endpoint, channel, cost });
  return { cost, remaining: creditsRemainingHeader(outcome.state, services.clock.now()) };
}

/** `X-Credits-Remaining` for a response that charged nothing (an error after authentication). */
export async function remainingFor(services: Services, principal: Principal): Promise<string> {
  return creditsRemainingHeader(await services.ledger.state(principal.account_id), services.clock.now());
}
