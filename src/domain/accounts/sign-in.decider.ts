/**
 * Sign-in by emailed link and the sessions it starts, decided on their streams (events in
 * session.events.ts; the handler and its rules are commands/sign-in/sign-in.handler.ts): a link is
 * sent once under its token's hash, used once within its lifetime, and its first use of an address
 * opens the account, its free key and its ledger in the same append. Time is the wall clock
 * (a link is a credential); an account's opening is dated on the data's clock, passed in.
 */
import type { Decider, Decision } from '../../core/decider.js';
import { AppError } from '../../core/errors.js';
import type { NewEvent } from '../../core/event-store.port.js';
import { openLedger } from '../ledger/ledger.opening.js';
import { initialLedgerState } from '../ledger/ledger.state.js';
import { ledgerStream } from '../ledger/ledger.events.js';
import { accountStream, type AccountEvent } from './account.events.js';
import { evolveAccount, initialAccountState, openAccount, type AccountState, type KeyMaterial } from './account.state.js';
import type { SessionEnded, SessionEvent, SessionStarted, SignInLinkSent, SignInLinkUsed } from './session.events.js';

export interface LinkState {
  /** The account the link opens; null for a link sent before addresses were sealed (it no longer signs in). */
  account_id: string | null;
  /** Sealed under the account's key. */
  email: string | null;
  expires_at: string | null;
  used: boolean;
}

export type LinkStatus = { status: 'valid'; account_id: string; email: string; expires_at: string } | { status: 'used' | 'expired' | 'unknown' };

/** The link's status at `now`, its address still sealed. */
export function statusOf(s: LinkState, now: Date): LinkStatus {
  if (s.account_id === null || s.email === null || s.expires_at === null) return { status: 'unknown' };
  if (s.used) return { status: 'used' };
  if (Date.parse(s.expires_at) <= now.getTime()) return { status: 'expired' };
  return { status: 'valid', account_id: s.account_id, email: s.email, expires_at: s.expires_at };
}

const evolveLink = (s: LinkState, e: SessionEvent): LinkState =>
  e.type === 'SignInLinkSent' ? { ...s, account_id: e.data.account_id ?? null, email: e.data.email, expires_at: e.data.expires_at } : e.type === 'SignInLinkUsed' ? { ...s, used: true } : s;
const initialLink = (): LinkState => ({ account_id: null, email: null, expires_at: null, used: false });

/** A new link on the stream of its token's hash (a token is random: one already there is refused). */
export const signInLinkDecider: Decider<LinkState, { type: 'SendLink'; data: SignInLinkSent['data'] }, SessionEvent> = {
  initialState: initialLink,
  evolve: evolveLink,
  decide: (s, command) => {
    if (s.email !== null) throw new AppError('conflict', 'this sign-in link was sent already');
    return [{ type: 'SignInLinkSent', data: command.data }];
  },
};

export interface SessionState {
  account_id: string | null;
  expires_at: string | null;
  ended: boolean;
}

/** Sign-out ends a session once; nothing for one ended or unknown. */
export const sessionDecider: Decider<SessionState, { type: 'EndSession' }, SessionStarted | SessionEnded> = {
  initialState: () => ({ account_id: null, expires_at: null, ended: false }),
  evolve: (s, e) => (e.type === 'SessionStarted' ? { ...s, account_id: e.data.account_id, expires_at: e.data.expires_at } : e.type === 'SessionEnded' ? { ...s, ended: true } : s),
  decide: (s, _command, now) => (s.account_id === null || s.ended ? [] : [{ type: 'SessionEnded', data: { reason: 'signed_out', at: now.toISOString() } }]),
};

/** The link and the account it opens, read together. */
export interface RedeemState {
  link: LinkState;
  account: AccountState;
}

export interface RedeemLink {
  type: 'RedeemLink';
  /** The stream of the session the sign-in starts (by its id's hash). */
  session_stream: string;
  session_days: number;
  /** The free key of an account this sign-in creates. */
  key: KeyMaterial;
  /** The data's clock: a new account's ledger periods are the data's, as every other account's. */
  opening: Date;
}

export interface Redeemed {
  account_id: string;
  expires_at: string;
  created: boolean;
  /** The name of the key a created account was given. */
  name: string;
}

function decideRedeem(s: RedeemState, command: RedeemLink, now: Date): Decision<RedeemState, SignInLinkUsed, Redeemed> {
  const status = s.account.forgotten_at !== null ? ({ status: 'unknown' } as const) : statusOf(s.link, now);
  // Decided on the stream: the same link used twice at once signs in once.
  if (status.status !== 'valid') throw new AppError('not_found', `This sign-in link is ${status.status}: ask for a new one`, { link: status.status });
  const at = now.toISOString();
  const expires_at = new Date(now.getTime() + command.session_days * 86_400_000).toISOString();
  const accountId = status.account_id;
  const created = !s.account.exists;
  const started: SessionStarted = { type: 'SessionStarted', data: { account_id: accountId, expires_at, at } };
  const writes: { streamId: string; events: NewEvent[]; expectedRevision?: 'no_stream' }[] = [{ streamId: command.session_stream, events: [started], expectedRevision: 'no_stream' }];
  let name = '';
  if (created) {
    // The address as the link holds it: sealed under this account's key.
    const opened = openAccount(s.account, { account_id: accountId, email: status.email, key: command.key }, command.opening);
    name = opened.flatMap((e) => (e.type === 'ApiKeyIssued' ? [e.data.name ?? ''] : []))[0] ?? '';
    const ledger = openLedger(initialLedgerState, { account_id: accountId, tier: 'free', pro: false }, command.opening).events;
    writes.push({ streamId: accountStream(accountId), events: opened }, { streamId: ledgerStream(accountId), events: ledger, expectedRevision: 'no_stream' });
  }
  return { events: [{ type: 'SignInLinkUsed', data: { account_id: accountId, created, at } }], writes, result: { account_id: accountId, expires_at, created, name } };
}

/** Read on the link's stream, then the account's (a recorded event names its stream). */
export const redeemLinkDecider: Decider<RedeemState, RedeemLink, SignInLinkUsed, Redeemed> = {
  initialState: () => ({ link: initialLink(), account: initialAccountState() }),
  evolve: (s, e) => {
    const event = e as unknown as (SessionEvent | AccountEvent) & { streamId?: string };
    return event.streamId?.startsWith('signin-') ? { ...s, link: evolveLink(s.link, event as SessionEvent) } : { ...s, account: evolveAccount(s.account, event as AccountEvent) };
  },
  decide: decideRedeem,
};
