/**
 * The decisions that span an account's streams: opening an account (the operator's `keys create`)
 * with its first key, its credit ledger and the claim of its address, and forgetting one, which
 * frees the address. Each is decided on the account's stream read together with the others it
 * writes, so the whole decision is one atomic append (commands/manage-keys/keys.handler.ts).
 */
import { eventsOf, type Decider, type Decision } from '../../core/decider.js';
import type { NewEvent } from '../../core/event-store.port.js';
import type { Tier } from '../plans.js';
import { openLedger } from '../ledger/ledger.opening.js';
import { evolve as evolveLedger, initialLedgerState, type LedgerState } from '../ledger/ledger.state.js';
import { LEDGER_STREAM_PREFIX, type LedgerEvent } from '../ledger/ledger.events.js';
import { accountDecider } from './account.decider.js';
import type { AccountEvent } from './account.events.js';
import { evolveAccount, initialAccountState, type AccountState, type KeyMaterial } from './account.state.js';
import { emailClaimDecider, type ClaimEvent, type ClaimState } from './email-claim.js';

export interface AccountStreams {
  account: AccountState;
  ledger: LedgerState;
  claim: ClaimState;
}

export type AccountStreamsCommand =
  | {
      type: 'OpenAccount';
      account_id: string;
      /** Sealed under the account's key. */
      email: string | null;
      key: KeyMaterial;
      tier: Tier;
      pro: boolean;
      /** The stream of the address's claim, when the address is one sign-in can use: claimed unless another account holds it. */
      claim_stream: string | null;
    }
  | { type: 'ForgetAccount'; account_id: string; claim_stream: string | null };

type Folded = (AccountEvent | LedgerEvent | ClaimEvent) & { streamId?: string };

/** Each stream's events fold into their part (a recorded event names its stream). */
function evolve(s: AccountStreams, e: Folded): AccountStreams {
  const stream = e.streamId ?? '';
  if (stream.startsWith(LEDGER_STREAM_PREFIX)) return { ...s, ledger: evolveLedger(s.ledger, e as LedgerEvent) };
  if (stream.startsWith('email-')) return { ...s, claim: emailClaimDecider.evolve(s.claim, e as ClaimEvent) };
  return { ...s, account: evolveAccount(s.account, e as AccountEvent) };
}

function decide(s: AccountStreams, command: AccountStreamsCommand, now: Date): Decision<AccountStreams, AccountEvent, void> {
  const at = now.toISOString();
  if (command.type === 'ForgetAccount') {
    const events = accountDecider.decide(s.account, { type: 'ForgetAccount' }, now);
    const frees = events.length > 0 && command.claim_stream !== null && s.claim.account_id === command.account_id;
    const released: NewEvent[] = [{ type: 'EmailReleased', data: { account_id: command.account_id, at } }];
    return { events, writes: frees ? [{ streamId: command.claim_stream!, events: released }] : [] };
  }
  const { account_id, email, key, tier, pro, claim_stream } = command;
  const opened = accountDecider.decide(s.account, { type: 'CreateAccount', account_id, email, key }, now);
  const writes = [{ streamId: `${LEDGER_STREAM_PREFIX}${account_id}`, events: openLedger(s.ledger, { account_id, tier, pro }, now).events as NewEvent[] }];
  // The first account of an address is the one its emailed sign-in link opens.
  if (claim_stream !== null && email !== null) writes.push({ streamId: claim_stream, events: eventsOf(emailClaimDecider.decide(s.claim, { type: 'ClaimEmail', data: { email, account_id, at } }, now)) });
  return { events: opened, writes };
}

/** Read on the account's stream, then its ledger's, then the claim's (as named by the command). */
export const accountStreamsDecider: Decider<AccountStreams, AccountStreamsCommand, AccountEvent> = {
  initialState: () => ({ account: initialAccountState(), ledger: initialLedgerState, claim: emailClaimDecider.initialState() }),
  evolve,
  decide,
};
