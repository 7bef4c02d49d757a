/**
 * The one account of an email address: how an address is normalised, and the stream that claims it
 * for an account (`email-<sha256(address)>`). Sign-in reads the claim to find (or make) the
 * account a link opens; the operator's `keys create` claims the address of the account it creates.
 */
import type { Decider } from '../../core/decider.js';
import { badRequest } from '../../core/errors.js';
import { sha256Hex } from '../../core/sha256.js';
import { emailStream, type EmailClaimed, type EmailReleased } from './session.events.js';

/** Trimmed and lower-cased; refused (400) unless it looks like one address. */
export function normalizeEmail(raw: unknown): string {
  const email = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (email.length > 254 || !/^[^\s@<>()[\],;:"]+@[^\s@<>()[\],;:"]+\.[a-z]{2,}$/.test(email)) {
    throw badRequest('Enter one email address, like you@example.com');
  }
  return email;
}

export interface ClaimState {
  account_id: string | null;
}

/** The stream that names the one account of an address (`email` normalised). */
export const claimStream = (email: string): string => emailStream(sha256Hex(email));

export type ClaimEvent = EmailClaimed | EmailReleased;

/** Claims the address for `account_id` (its `email` sealed under that account's key) unless an account holds it. */
export interface ClaimEmail {
  type: 'ClaimEmail';
  data: EmailClaimed['data'];
}

/** An address's claim: the first account to claim it holds it until that account is forgotten. */
export const emailClaimDecider: Decider<ClaimState, ClaimEmail, ClaimEvent> = {
  initialState: () => ({ account_id: null }),
  evolve: (s, e) => (e.type === 'EmailClaimed' ? { account_id: e.data.account_id } : e.type === 'EmailReleased' ? { account_id: null } : s),
  decide: (s, command) => (s.account_id !== null ? [] : [{ type: 'EmailClaimed', data: command.data }]),
};
