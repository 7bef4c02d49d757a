/**
 * `GET /v1/keys`: the account's keys with their limits, what each spent today and this month, and
 * its last charged call; also what the account page and `scores keys list` show. The keys are the
 * account's stream folded (read your writes: a key or a change just made is there), the spend is
 * the ledger's own (what the next debit is decided on), the last use the key-usage read model.
 */
import type { EventStore } from '../../src/core/event-store.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { accountStream, type AccountEvent } from '../../src/domain/accounts/account.events.js';
import { evolveAccount, initialAccountState, type KeyState } from '../../src/domain/accounts/account.state.js';
import { budgetLeft } from '../../src/domain/ledger/key-spend.js';
import { keyBudgetOf, type KeyScope } from '../../src/domain/accounts/key-limits.js';
import type { MeteredCall } from '../shared/query-context.js';
import { keysLastUsed } from './get-key-usage.query.js';

export interface ApiKeyItem {
  /** @example "key_3kTz9c2Lb" */
  key_id: string;
  /** What the account calls the key. */
  name: string;
  /** The key's first characters, shown to tell keys apart (the key itself is never shown again). */
  prefix: string;
  /** `rotated`: replaced by another key; it works until its grace period ends. */
  status: 'active' | 'revoked' | 'rotated';
  /** True for the key that made this request. */
  current: boolean;
  /**
   * Credits the key may spend per UTC day; null: no daily limit.
   * @isInt
   */
  daily_credit_limit: number | null;
  /**
   * Credits the key may spend per UTC month; null: no monthly limit.
   * @isInt
   */
  monthly_credit_limit: number | null;
  /**
   * When the key stops working (ISO 8601, UTC); null: never.
   * @format date-time
   */
  expires_at: string | null;
  /** `read_only`: GET calls only (no webhook or key changes). */
  scope: KeyScope;
  /** The operations (rate-card keys, as `GET /v1/usage` lists them) the key may call; null: all its scope allows. */
  operations: string[] | null;
  /**
   * Credits charged to the key today (UTC).
   * @isInt
   */
  spent_today: number;
  /**
   * Credits charged to the key this month (UTC).
   * @isInt
   */
  spent_this_month: number;
  /**
   * What the key may still spend: the smaller of what is left of its daily and monthly limits; null without a credit limit.
   * @isInt
   */
  budget_remaining: number | null;
  /**
   * The key's last charged call; null: none yet.
   * @format date-time
   */
  last_used_at: string | null;
}

export interface ApiKeysResponse {
  keys: ApiKeyItem[];
}

/** The account's keys (every one it ever had, in the order they were issued), folded from its stream. */
export async function accountKeys(events: Pick<EventStore, 'readStream'>, accountId: string): Promise<KeyState[]> {
  const recorded = (await events.readStream(accountStream(accountId))) as unknown as AccountEvent[];
  return [...recorded.reduce(evolveAccount, initialAccountState()).keys.values()];
}

/** The rows of the account's keys, given what each spent (the ledger's) and last used (the read model). */
export function keyItems(
  keys: readonly KeyState[],
  spend: ReadonlyMap<string, { today: number; month: number }>,
  lastUsed: ReadonlyMap<string, string>,
  currentKeyId: string | null,
): ApiKeyItem[] {
  return keys.map((k) => {
    const spent = spend.get(k.key_id) ?? { today: 0, month: 0 };
    return {
      key_id: k.key_id,
      name: k.name,
      prefix: k.prefix,
      status: k.status,
      current: k.key_id === currentKeyId,
      ...k.limits,
      spent_today: spent.today,
      spent_this_month: spent.month,
      budget_remaining: budgetLeft(keyBudgetOf(k.limits), spent),
      last_used_at: lastUsed.get(k.key_id) ?? null,
    };
  });
}

/** The account's keys as the account page and the CLI show them. */
export async function listAccountKeys(
  deps: { events: Pick<EventStore, 'readStream'>; reads: ReadStore },
  accountId: string,
  spend: ReadonlyMap<string, { today: number; month: number }>,
  currentKeyId: string | null = null,
): Promise<ApiKeyItem[]> {
  const [keys, lastUsed] = await Promise.all([accountKeys(deps.events, accountId), keysLastUsed(deps.reads, accountId)]);
  return keyItems(keys, spend, lastUsed, currentKeyId);
}

/** `GET /v1/keys`, REST: the caller's account's keys. */
export async function run(call: MeteredCall): Promise<ApiKeysResponse> {
  const { ctx, principal } = call;
  // The last use of each key as of the account's last debit (read your writes), then the spend.
  await ctx.ledgerCaughtUp(principal.account_id);
  const spend = await ctx.meter.keySpend(principal);
  const keys = await listAccountKeys(ctx, principal.account_id, spend, principal.key_id);
  // Free: the charge records nothing, and sets the balance the answer carries.
  await call.charge('keys');
  return { keys };
}
