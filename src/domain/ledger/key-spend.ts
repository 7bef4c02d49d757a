/**
 * What each key of an account spent today and this month (UTC), and the refusal of a debit that
 * would take a key past its limit (docs/ledger.md, "Key limits"). Decided with the debit, on the
 * state the ledger handler folds from the account's stream, so it is exact under concurrency and
 * across replicas as the credits are. Kept beside the `LedgerState`, not in it: that state is
 * carried into the hashed `LedgerPeriodClosed` lines, and a key is no part of a ledger line (the
 * key of each debit is in its event's metadata: withCallKeys).
 */
import { AppError } from '../../core/errors.js';
import { nextPeriodStart } from './billing-period.js';
import { callKeysOf } from './ledger.events.js';

/** One key's spend in its latest day and month (an older window reads as 0). */
export interface KeySpendEntry {
  /** `YYYY-MM-DD` (UTC) of `day_spent`. */
  day: string;
  day_spent: number;
  /** `YYYY-MM` (UTC) of `month_spent`. */
  month: string;
  month_spent: number;
}

/** By key id; only keys that spent this month (older entries are dropped as new spend is recorded). */
export type KeySpend = Readonly<Record<string, KeySpendEntry>>;

export const NO_KEY_SPEND: KeySpend = Object.freeze({});

/** A key's credit limits as a debit carries them (null: none in that window). */
export interface KeyBudget {
  daily: number | null;
  monthly: number | null;
}

/** What a key spent in the day and month of `at` (an ISO instant). */
export function spentAt(spend: KeySpend, keyId: string, at: string): { today: number; month: number } {
  const e = spend[keyId];
  if (!e) return { today: 0, month: 0 };
  return { today: e.day === at.slice(0, 10) ? e.day_spent : 0, month: e.month === at.slice(0, 7) ? e.month_spent : 0 };
}

/**
 * `spend` with `cost` more for each key of `charges` at `at`, as a new object unless `owned` (a
 * copy this decision made already, which it may change in place). Entries of months before
 * `at`'s are dropped on copy: they can never count again.
 */
export function addSpend(spend: KeySpend, charges: readonly (readonly [string, number])[], at: string, owned = false): KeySpend {
  const day = at.slice(0, 10);
  const month = at.slice(0, 7);
  let out = spend as Record<string, KeySpendEntry>;
  if (!owned) {
    out = {};
    for (const k in spend) if (spend[k]!.month >= month) out[k] = spend[k]!;
  }
  for (let i = 0; i < charges.length; i++) {
    const [key, cost] = charges[i]!;
    if (cost <= 0) continue;
    const e = out[key];
    const sameMonth = e !== undefined && e.month === month;
    out[key] = { day, day_spent: (sameMonth && e.day === day ? e.day_spent : 0) + cost, month, month_spent: (sameMonth ? e.month_spent : 0) + cost };
  }
  return out;
}

/**
 * Folds one recorded event of the ledger stream into the spend: a debit's cost to the key its
 * metadata names, a batch's to each call's key. Any other event changes nothing.
 */
export function foldKeySpend(spend: KeySpend, e: { type: string; data: unknown; metadata?: Record<string, unknown> | null }): KeySpend {
  if (e.type !== 'CreditsDebited' && e.type !== 'CreditsDebitedBatch') return spend;
  const m = e.metadata;
  if (!m) return spend;
  const data = e.data as { at?: unknown; cost?: unknown; calls?: { cost?: unknown } };
  if (typeof data?.at !== 'string') return spend;
  if (e.type === 'CreditsDebited') {
    const [key] = callKeysOf(e);
    return key && typeof data.cost === 'number' ? addSpend(spend, [[key, data.cost]], data.at) : spend;
  }
  const keys: unknown = m['key_ids'];
  const costs: unknown = data.calls?.cost;
  if (!Array.isArray(keys) || !Array.isArray(costs)) return spend;
  const charges: [string, number][] = [];
  for (let i = 0; i < keys.length; i++) {
    const key: unknown = keys[i];
    const cost: unknown = costs[i];
    if (typeof key === 'string' && key !== '' && typeof cost === 'number') charges.push([key, cost]);
  }
  return charges.length ? addSpend(spend, charges, data.at) : spend;
}

/** 00:00Z of the day after `now`. */
const nextDayStart = (now: Date): string => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();

/** Credits the key may still spend after `spent` (the smaller of the day's and the month's rest); null without limits. */
export function budgetLeft(budget: KeyBudget | null | undefined, spent: { today: number; month: number }): number | null {
  if (!budget) return null;
  const day = budget.daily === null ? Infinity : budget.daily - spent.today;
  const month = budget.monthly === null ? Infinity : budget.monthly - spent.month;
  const left = Math.min(day, month);
  return left === Infinity ? null : Math.max(0, left);
}

/**
 * 429 `key_budget_exhausted` when `cost` would take the key past its monthly or daily limit at
 * `now` (the month first: when both are spent, waiting for the day's reset does not help), with
 * `Retry-After` at that window's reset. Nothing when it fits.
 */
export function requireKeyBudget(spend: KeySpend, keyId: string, budget: KeyBudget, cost: number, now: Date, at = now.toISOString()): void {
  const spent = spentAt(spend, keyId, at);
  const over: ['month' | 'day', number, number, string] | null =
    budget.monthly !== null && spent.month + cost > budget.monthly
      ? ['month', budget.monthly, spent.month, nextPeriodStart(now)]
      : budget.daily !== null && spent.today + cost > budget.daily
        ? ['day', budget.daily, spent.today, nextDayStart(now)]
        : null;
  if (!over) return;
  const [window, limit, used, resetsAt] = over;
  const retry = Math.max(1, Math.ceil((Date.parse(resetsAt) - now.getTime()) / 1000));
  const per = window === 'day' ? 'daily' : 'monthly';
  const never = cost > limit ? ` This call alone costs more than the limit: raise the key's ${per} limit to make it.` : '';
  throw new AppError(
    'key_budget_exhausted',
    `This call costs ${cost} credits and this key has ${Math.max(0, limit - used)} of its ${per} limit of ${limit} left (spent ${used} this ${window}); the limit resets at ${resetsAt}.${never} Nothing was charged.`,
    { key_id: keyId, limit, window, spent: used, cost, resets_at: resetsAt, retry_after_seconds: retry },
  );
}
