import { wallClockOf, type Clock } from '../../src/core/clock.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import { AppError, notFound } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Ids } from '../../src/core/ids.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { TIERS, type Tier } from '../../src/domain/plans.js';
import { keyIndex } from '../../projections/api-keys/api-keys.projection.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { stateAt } from '../../src/domain/ledger/ledger.figures.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { accountDecider, type AccountCommand } from '../../src/domain/accounts/account.decider.js';
import { evolveAccount, initialAccountState, type AccountState, type KeyMaterial } from '../../src/domain/accounts/account.state.js';
import { accountStreamsDecider } from '../../src/domain/accounts/account-opening.decider.js';
import { accountStream, type AccountEvent } from '../../src/domain/accounts/account.events.js';
import { claimStream, normalizeEmail } from '../../src/domain/accounts/email-claim.js';
import { generateApiKey, hashApiKey, shownPrefix } from '../../src/domain/accounts/api-keys.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import { NO_LIMITS, applyLimits, limitsOf, type KeyLimits, type KeyLimitsChange } from '../../src/domain/accounts/key-limits.js';

export interface IssuedKey {
  account_id: string;
  key_id: string;
  /** The key itself: shown once, never stored. */
  key: string;
  prefix: string;
  /** What the account calls the key (given, or `Key <n>`). */
  name: string;
  tier: Tier;
  pro: boolean;
  /** What the key may spend and do (given, or inherited by a rotation's new key). */
  limits: KeyLimits;
}

/** The name and limits the decider gave the key it issued. */
const issuedAs = (events: readonly AccountEvent[], keyId: string): { name: string; limits: KeyLimits } => {
  const issued = events.find((e) => e.type === 'ApiKeyIssued' && e.data.key_id === keyId);
  return issued?.type === 'ApiKeyIssued' ? { name: issued.data.name ?? '', limits: limitsOf(issued.data.limits) } : { name: '', limits: NO_LIMITS };
};

/** A new key's material; `limits` checked as a change of no limits at `now` (the wall clock: an expiry must lie ahead of it). */
function keyMaterial(ids: Ids, key: string, name?: string, limits?: KeyLimitsChange, now?: Date): KeyMaterial {
  const material: KeyMaterial = { key_id: ids.next('key_', 9), key_hash: hashApiKey(key), prefix: shownPrefix(key), ...(name === undefined ? {} : { name }) };
  if (limits) material.limits = applyLimits(NO_LIMITS, limits, now ?? new Date());
  return material;
}

/** Creates an account with its first key and opens its credit ledger, in one atomic append. */
export async function createAccountWithKey(
  deps: { events: EventStore; clock: Clock; transportClock?: Clock; ids: Ids; personal: PersonalData },
  input: { tier: Tier; pro?: boolean; email?: string | null; accountId?: string; key?: string; name?: string; limits?: KeyLimitsChange },
): Promise<IssuedKey> {
  const now = deps.clock.now();
  const accountId = input.accountId ?? deps.ids.nextHex('acct_', 20);
  const key = input.key ?? generateApiKey();
  const material = keyMaterial(deps.ids, key, input.name, input.limits, wallClockOf(deps).now());
  const pro = input.pro ?? false;
  // The first account of an address is the one its emailed sign-in link opens (one account,
  // whichever door it came in by); a later account given the same address is not.
  const address = emailOf(input.email);
  const claim = address === null ? null : claimStream(address);
  // Sealed under the new account's key: forgetting the account forgets its address.
  const sealed = input.email ? await deps.personal.seal(accountId, input.email, 'email') : null;
  const command = { type: 'OpenAccount' as const, account_id: accountId, email: sealed, key: material, tier: input.tier, pro, claim_stream: claim };
  const { events } = await handleCommand(deps.events, accountStreamsDecider, streamsOf(accountId, claim), command, fixedAt(now));
  return { account_id: accountId, key_id: material.key_id, key, prefix: material.prefix, ...issuedAs(events, material.key_id), tier: input.tier, pro };
}

/** The address normalised as sign-in reads it, or null for none (or one sign-in could never use). */
function emailOf(email: string | null | undefined): string | null {
  if (!email) return null;
  try {
    return normalizeEmail(email);
  } catch {
    return null;
  }
}

async function accountOfKey(reads: ReadStore, keyId: string): Promise<string> {
  const idx = await reads.get(keyIndex, keyId);
  if (!idx) throw notFound(`no key ${keyId}`);
  return idx.account_id;
}

/** The account's stream, its ledger's and its address's claim's, read together for a decision on all three. */
const streamsOf = (accountId: string, claim: string | null): string[] => (claim === null ? [accountStream(accountId), ledgerStream(accountId)] : [accountStream(accountId), ledgerStream(accountId), claim]);

/** A clock stopped at `at`: an account is opened at the instant its id and key were made. */
const fixedAt = (at: Date): Clock => ({ now: () => at });

async function runAccountCommand(events: EventStore, clock: Clock, accountId: string, command: AccountCommand): Promise<AccountEvent[]> {
  return (await handleCommand(events, accountDecider, accountStream(accountId), command, clock)).events;
}

/** A new key on an existing account (the account page's "Create a key"), named `name` or by default, with `limits` if given. */
export async function issueKey(deps: { events: EventStore; clock: Clock; transportClock?: Clock; ids: Ids }, accountId: string, name?: string, limits?: KeyLimitsChange): Promise<IssuedKey> {
  const key = generateApiKey();
  const material = keyMaterial(deps.ids, key, name, limits, wallClockOf(deps).now());
  const out = await runAccountCommand(deps.events, deps.clock, accountId, { type: 'IssueKey', key: material });
  const plan = stateAt(foldLedger(await deps.events.readStream(ledgerStream(accountId))), deps.clock.now());
  return { account_id: accountId, key_id: material.key_id, key, prefix: material.prefix, ...issuedAs(out, material.key_id), tier: plan.tier, pro: plan.pro };
}

/** The account's state (its email and keys), folded from its stream. */
export async function loadAccount(events: EventStore, accountId: string): Promise<AccountState> {
  return (await foldStream(events, accountDecider, accountStream(accountId))).state;
}

/**
 * Records that the account is forgotten: its keys revoked, `AccountForgotten`, and its address
 * (`email`, opened by the caller while the key still opens it) released for a new account, in
 * one append. Nothing for an account forgotten already. The key itself is destroyed by the
 * caller once this is written (src/app/accounts/forget-account.ts).
 */
export async function recordForgetting(deps: { events: EventStore; clock: Clock }, accountId: string, email: string | null): Promise<{ keys_revoked: number }> {
  const address = emailOf(email);
  const claim = address === null ? null : claimStream(address);
  const streams = claim === null ? [accountStream(accountId)] : [accountStream(accountId), claim];
  const { events } = await handleCommand(deps.events, accountStreamsDecider, streams, { type: 'ForgetAccount', account_id: accountId, claim_stream: claim }, deps.clock);
  return { keys_revoked: events.filter((e) => e.type === 'ApiKeyRevoked').length };
}

/** The operator's rate override of an account (an account event like any other change). */
export async function setRateLimit(deps: { events: EventStore; clock: Clock }, accountId: string, perSecond: number | 'unlimited' | 'tier'): Promise<{ changed: boolean }> {
  const out = await runAccountCommand(deps.events, deps.clock, accountId, { type: 'SetRateLimit', per_second: perSecond });
  return { changed: out.length > 0 };
}

/**
 * Changes a key's limits (a field of `change` absent stays, null clears it), decided on the
 * account's stream as it is: `accountId` (the account page, the API) refuses a key of another
 * account as unknown; without it (the operator's CLI) the key's account is looked up. Decided on
 * the wall clock, which an expiry is checked against. Every replica enforces the change within
 * seconds (the meter drops its cached lookups when it sees the account's event).
 */
export async function setKeyLimits(
  deps: { events: EventStore; reads: ReadStore; clock: Clock; transportClock?: Clock },
  keyId: string,
  change: KeyLimitsChange,
  accountId?: string,
): Promise<{ key_id: string; account_id: string; changed: boolean; limits: KeyLimits }> {
  const account = accountId ?? (await accountOfKey(deps.reads, keyId));
  const handled = await handleCommand(deps.events, accountDecider, accountStream(account), { type: 'SetKeyLimits', key_id: keyId, change }, wallClockOf(deps));
  const limits = handled.state.keys.get(keyId)?.limits ?? NO_LIMITS;
  return { key_id: keyId, account_id: account, changed: handled.events.length > 0, limits };
}

/** Revokes a key at once (403 `key_forbidden` from then on). */
export async function revokeKey(deps: { events: EventStore; reads: ReadStore; clock: Clock }, keyId: string): Promise<{ key_id: string; revoked: boolean }> {
  const accountId = await accountOfKey(deps.reads, keyId);
  const out = await runAccountCommand(deps.events, deps.clock, accountId, { type: 'RevokeKey', key_id: keyId });
  return { key_id: keyId, revoked: out.length > 0 };
}

/**
 * Issues a replacement key; the old one keeps working for `graceSeconds` (0 = stops at once), on
 * the wall clock (`transportClock`, default `clock`): a credential's grace ends in real time even
 * where SCORES_NOW pins the data's clock.
 */
export async function rotateKey(
  deps: { events: EventStore; reads: ReadStore; clock: Clock; transportClock?: Clock; ids: Ids },
  keyId: string,
  graceSeconds: number,
): Promise<IssuedKey & { replaced_key_id: string; old_key_valid_until: string }> {
  const accountId = await accountOfKey(deps.reads, keyId);
  const key = generateApiKey();
  const material = keyMaterial(deps.ids, key);
  const real = wallClockOf(deps);
  const out = await runAccountCommand(deps.events, real, accountId, { type: 'RotateKey', key_id: keyId, grace_seconds: graceSeconds, key: material });
  const rotated = out.find((e) => e.type === 'ApiKeyRotated');
  // The new key carries the account's plan as it stands now (a key has no plan of its own).
  const plan = stateAt(foldLedger(await deps.events.readStream(ledgerStream(accountId))), deps.clock.now());
  return {
    account_id: accountId,
    key_id: material.key_id,
    key,
    prefix: material.prefix,
    ...issuedAs(out, material.key_id),
    tier: plan.tier,
    pro: plan.pro,
    replaced_key_id: keyId,
    old_key_valid_until: rotated?.type === 'ApiKeyRotated' ? rotated.data.grace_until : real.now().toISOString(),
  };
}

/** A demo account, as `ensureDemoAccounts` found or created it. */
export interface DemoAccount {
  tier: Tier;
  account_id: string;
  /** The key of an account created by this call: random, shown once like any key. Null when it existed. */
  key: string | null;
  /** The account's active keys: their ids and hashes (the store holds no key in clear). */
  active: { key_id: string; key_hash: string }[];
}

/**
 * The demo's accounts, one per tier (`demo-<tier>`), created once with random keys (nothing in
 * the code or its defaults derives them); later starts find them, and their keys are then known
 * only to whoever kept them (`npm start` keeps them in a file of the data directory).
 */
export async function ensureDemoAccounts(deps: { events: EventStore; clock: Clock; ids: Ids; personal: PersonalData }): Promise<DemoAccount[]> {
  const out: DemoAccount[] = [];
  for (const tier of TIERS) {
    const accountId = `demo-${tier}`;
    let key: string | null = null;
    if ((await deps.events.readStream(accountStream(accountId), { maxCount: 1 })).length === 0) {
      try {
        key = (await createAccountWithKey(deps, { tier, accountId, email: `${tier}@demo.invalid` })).key;
      } catch (err) {
        // Another process created it meanwhile: its key is that process's to show.
        if (!(err instanceof AppError && err.code === 'conflict')) throw err;
      }
    }
    const events = (await deps.events.readStream(accountStream(accountId))) as unknown as AccountEvent[];
    const state = events.reduce(evolveAccount, initialAccountState());
    const active = events.flatMap((e) =>
      e.type === 'ApiKeyIssued' && state.keys.get(e.data.key_id)?.status === 'active' ? [{ key_id: e.data.key_id, key_hash: e.data.key_hash }] : [],
    );
    out.push({ tier, account_id: accountId, key, active });
  }
  return out;
}
