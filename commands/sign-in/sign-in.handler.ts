/**
 * Sign-in by emailed link, and the sessions it starts (events in src/domain/accounts/session.events.ts).
 *
 * - A link is sent to any well-formed address, whether or not it has an account: the page never
 *   tells (no account enumeration). It signs in once, within 15 minutes.
 * - An address gets at most 3 links per 15 minutes; further requests mail nothing and are answered
 *   the same, so that a stranger can neither flood the mailbox nor lock its owner out.
 * - The first link asked for an address claims it for a new account id; the first sign-in with a
 *   link creates that account, its free key and its credit ledger, in the same atomic append that
 *   uses the link. The address is written only sealed under that account's key.
 * - A session is an opaque random id in the browser's cookie; the log keeps its hash, when it
 *   started, when it expires and when it was ended by signing out.
 */
import { wallClockOf, type Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import { AppError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Ids } from '../../src/core/ids.port.js';
import type { Mailer } from '../../src/core/mail.port.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { generateApiKey, hashApiKey, shownPrefix } from '../../src/domain/accounts/api-keys.js';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { accountDecider } from '../../src/domain/accounts/account.decider.js';
import { claimStream, emailClaimDecider, normalizeEmail } from '../../src/domain/accounts/email-claim.js';
import { sessionStream, signInStream } from '../../src/domain/accounts/session.events.js';
import { redeemLinkDecider, sessionDecider, signInLinkDecider, statusOf, type LinkStatus } from '../../src/domain/accounts/sign-in.decider.js';

export type { LinkStatus };

export const SIGN_IN_LINK_MINUTES = 15;
export const SESSION_DAYS = 7;

export interface SignInDeps {
  events: EventStore;
  clock: Clock;
  /**
   * The wall clock (Services.transportClock) that links and sessions expire on: a link is a
   * credential, so it lasts 15 real minutes even where SCORES_NOW pins the data's clock (which
   * would keep it valid for ever). Defaults to `clock`.
   */
  transportClock?: Clock;
  ids: Ids;
  /** Seals the address under the key of the account it opens. */
  personal: PersonalData;
}

// ---------------------------------------------------------------------------------------------
// Links

/**
 * The account an address opens: the one its claim names, else a new account id claimed for it
 * now (the account itself is made by the first link used). Claiming at the first link lets the
 * link, the claim and the account seal the address under one key.
 */
async function claimedAccount(deps: SignInDeps, email: string): Promise<string> {
  const stream = claimStream(email);
  const held = (await foldStream(deps.events, emailClaimDecider, stream)).state.account_id;
  if (held !== null) return held;
  const newAccountId = deps.ids.nextHex('acct_', 20);
  const data = { email: await deps.personal.seal(newAccountId, email, 'email'), account_id: newAccountId, at: wallClockOf(deps).now().toISOString() };
  // Another first link of the address may have claimed it meanwhile: the claim decides.
  return (await handleCommand(deps.events, emailClaimDecider, stream, { type: 'ClaimEmail', data }, wallClockOf(deps))).state.account_id!;
}

/** Records a new single-use link for `email` and mails it. */
export async function sendSignInLink(deps: SignInDeps & { mailer: Mailer; baseUrl: string }, rawEmail: unknown): Promise<{ email: string; expires_at: string }> {
  const email = normalizeEmail(rawEmail);
  const accountId = await claimedAccount(deps, email);
  const token = deps.ids.next('', 32);
  const tokenHash = sha256Hex(token);
  const now = wallClockOf(deps).now();
  const expires_at = new Date(now.getTime() + SIGN_IN_LINK_MINUTES * 60_000).toISOString();
  const sealed = await deps.personal.seal(accountId, email, 'email');
  const data = { email: sealed, account_id: accountId, expires_at, at: now.toISOString() };
  await handleCommand(deps.events, signInLinkDecider, signInStream(tokenHash), { type: 'SendLink', data }, wallClockOf(deps));
  await deps.mailer.send({
    id: `signin-${tokenHash}`,
    to: email,
    subject: 'Your sign-in link for Scores API',
    text: [
      'Follow this link to sign in to Scores API:',
      '',
      `${deps.baseUrl}/account/sign-in/${token}`,
      '',
      `It works once, within ${SIGN_IN_LINK_MINUTES} minutes (until ${expires_at}).`,
      'If this is your first sign-in, it creates your developer account and a free API key.',
      'If you did not ask for it, ignore this email: nothing happens without the link.',
    ].join('\n'),
  });
  return { email, expires_at };
}

/** Sign-in mails one address may receive per window (a link's lifetime): see SignInMailBudget. */
export const SIGN_IN_MAILS_PER_ADDRESS = 3;

/**
 * The sign-in mails each address has had in its current window, by the address's hash, in the
 * process (each replica counts its own). The window starts at its first mail and lasts a link's
 * lifetime, on the clock that dates the links (real time): so whenever the budget turns a request
 * away, the last link mailed is still valid, and the owner signs in with it.
 */
export class SignInMailBudget {
  private readonly windows = new Map<string, { ends: number; mailed: number }>();
  private nextSweep = 0;
  private readonly windowMs = SIGN_IN_LINK_MINUTES * 60_000;

  constructor(
    private readonly clock: Clock,
    private readonly perWindow = SIGN_IN_MAILS_PER_ADDRESS,
  ) {}

  /** Counts one mail to `email` (normalised): false, counting nothing, when its window's mails are all sent. */
  take(email: string): boolean {
    const now = this.clock.now().getTime();
    this.sweep(now);
    const key = sha256Hex(email);
    const window = this.windows.get(key);
    if (!window || window.ends <= now) {
      this.windows.set(key, { ends: now + this.windowMs, mailed: 1 });
      return true;
    }
    if (window.mailed >= this.perWindow) return false;
    window.mailed++;
    return true;
  }

  /** Drops ended windows, at most once a window: the map holds the addresses of the last two windows at most. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    for (const [key, window] of this.windows) if (window.ends <= now) this.windows.delete(key);
    this.nextSweep = now + this.windowMs;
  }
}

/**
 * Asks a sign-in link for `email`: mails a new one while the address's budget allows, and nothing
 * beyond it. The caller answers the same either way (`mailed` is for the log and the tests): the
 * asker learns nothing, and the links already mailed keep working.
 */
export async function requestSignInLink(
  deps: SignInDeps & { mailer: Mailer; baseUrl: string; budget: SignInMailBudget },
  rawEmail: unknown,
): Promise<{ email: string; mailed: boolean }> {
  const email = normalizeEmail(rawEmail);
  if (!deps.budget.take(email)) return { email, mailed: false };
  await sendSignInLink(deps, email);
  return { email, mailed: true };
}

/** What a link would do now, without using it (the page that asks to confirm the sign-in), its address opened. */
export async function inspectSignInLink(deps: SignInDeps, token: string): Promise<LinkStatus> {
  const { state } = await foldStream(deps.events, signInLinkDecider, signInStream(sha256Hex(token)));
  const status = statusOf(state, wallClockOf(deps).now());
  if (status.status !== 'valid') return status;
  // The account was forgotten since the link was sent.
  const email = await deps.personal.open(status.account_id, status.email, 'email');
  return email === null ? { status: 'unknown' } : { ...status, email };
}

export interface SignedIn {
  account_id: string;
  /** The session's id: the cookie's value, never stored. */
  session_id: string;
  expires_at: string;
  /** The free key of an account this sign-in created: shown once, never again. */
  new_key: { key_id: string; key: string; prefix: string; name: string } | null;
}

/**
 * Uses the link: signs in, creating the account on the address's first sign-in. Throws 404
 * `not_found` for a link that is unknown, used or expired.
 */
export async function redeemSignInLink(deps: SignInDeps, token: string): Promise<SignedIn> {
  const link = await inspectSignInLink(deps, token);
  if (link.status !== 'valid') throw new AppError('not_found', `This sign-in link is ${link.status === 'unknown' ? 'not one we sent' : link.status}: ask for a new one`, { link: link.status });
  const tokenHash = sha256Hex(token);
  const sessionId = deps.ids.next('', 32);
  const key = generateApiKey();
  const material = { key_id: deps.ids.next('key_', 9), key_hash: hashApiKey(key), prefix: shownPrefix(key) };
  const command = { type: 'RedeemLink' as const, session_stream: sessionStream(sha256Hex(sessionId)), session_days: SESSION_DAYS, key: material, opening: deps.clock.now() };
  const { result } = await handleCommand(deps.events, redeemLinkDecider, [signInStream(tokenHash), accountStream(link.account_id)], command, wallClockOf(deps));
  const { account_id, expires_at, created, name } = result!;
  return { account_id, session_id: sessionId, expires_at, new_key: created ? { key_id: material.key_id, key, prefix: material.prefix, name } : null };
}

// ---------------------------------------------------------------------------------------------
// Sessions

/** The account a session id signs in, or null (unknown, expired, signed out, or its account forgotten). */
export async function sessionAccount(deps: Pick<SignInDeps, 'events' | 'clock' | 'transportClock'>, sessionId: string): Promise<{ account_id: string; expires_at: string } | null> {
  if (!/^[A-Za-z0-9_-]{20,64}$/.test(sessionId)) return null;
  const { state: s } = await foldStream(deps.events, sessionDecider, sessionStream(sha256Hex(sessionId)));
  if (s.account_id === null || s.expires_at === null || s.ended || Date.parse(s.expires_at) <= wallClockOf(deps).now().getTime()) return null;
  // Forgetting ends every session of the account without knowing them: they are checked here.
  if ((await foldStream(deps.events, accountDecider, accountStream(s.account_id))).state.forgotten_at !== null) return null;
  return { account_id: s.account_id, expires_at: s.expires_at };
}

/** Ends the session (sign-out); nothing for one already ended or unknown. */
export async function signOut(deps: Pick<SignInDeps, 'events' | 'clock' | 'transportClock'>, sessionId: string): Promise<void> {
  if (!/^[A-Za-z0-9_-]{20,64}$/.test(sessionId)) return;
  await handleCommand(deps.events, sessionDecider, sessionStream(sha256Hex(sessionId)), { type: 'EndSession' }, wallClockOf(deps));
}
