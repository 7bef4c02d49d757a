/**
 * The options that give a key its limits, shared by `scores keys create` and `scores keys limits`,
 * and how a key and its limits print.
 */
import type { Command } from 'commander';
import type { KeyLimits, KeyLimitsChange } from '../../domain/accounts/key-limits.js';

export interface LimitsOptions {
  dailyLimit?: string;
  monthlyLimit?: string;
  expiresAt?: string;
  readOnly?: boolean;
  scope?: string;
  operations?: string;
}

/** Adds the limit options to `command`; `clearable`: each also takes "none" (or "all") to remove it. */
export function keyLimitsOptions(command: Command, clearable: boolean): Command {
  const none = clearable ? ' ("none" removes it)' : '';
  return command
    .option('--daily-limit <credits>', `credits the key may spend per UTC day${none}`)
    .option('--monthly-limit <credits>', `credits the key may spend per UTC month${none}`)
    .option('--expires-at <instant>', `when the key stops working, ISO 8601 (UTC without a zone)${none}`)
    .option('--read-only', 'GET calls only: no webhook or key changes')
    .option('--scope <scope>', 'all or read_only (--read-only is --scope read_only)')
    .option('--operations <list>', `comma-separated rate-card keys or MCP tool names the key may call${clearable ? ' ("all" removes the list)' : ''}`);
}

const cleared = (v: string): boolean => v.trim().toLowerCase() === 'none';
/** A number as given: the decider refuses anything but a whole number from 1 (400, exit 1). */
const credits = (v: string): number | null => (cleared(v) ? null : Number(v));

/** The change the options ask for; undefined when they ask for none. */
export function limitsChangeOf(o: LimitsOptions): KeyLimitsChange | undefined {
  const change: KeyLimitsChange = {};
  if (o.dailyLimit !== undefined) change.daily_credit_limit = credits(o.dailyLimit);
  if (o.monthlyLimit !== undefined) change.monthly_credit_limit = credits(o.monthlyLimit);
  if (o.expiresAt !== undefined) change.expires_at = cleared(o.expiresAt) ? null : o.expiresAt;
  if (o.readOnly) change.scope = 'read_only';
  if (o.scope !== undefined) change.scope = o.scope;
  if (o.operations !== undefined) change.operations = o.operations.trim().toLowerCase() === 'all' ? null : o.operations.split(',').map((x) => x.trim()).filter(Boolean);
  return Object.keys(change).length ? change : undefined;
}

/** One line: the key, its limits, and (from a listing) its spend and last use. */
export function describeKey(k: { key_id: string; name?: string; status?: string; spent_today?: number; spent_this_month?: number; last_used_at?: string | null } & Omit<KeyLimits, 'operations'> & { operations: readonly string[] | null }): string {
  const limits = [
    k.daily_credit_limit === null ? null : `${k.daily_credit_limit} credits a day`,
    k.monthly_credit_limit === null ? null : `${k.monthly_credit_limit} a month`,
    k.expires_at === null ? null : `expires ${k.expires_at}`,
    k.scope === 'read_only' ? 'read-only' : null,
    k.operations === null ? null : `only ${k.operations.join(', ')}`,
  ].filter(Boolean);
  const head = [k.key_id, k.name, k.status].filter(Boolean).join('  ');
  const spend = k.spent_today === undefined ? '' : `; spent ${k.spent_today} today, ${k.spent_this_month} this month; last used ${k.last_used_at ?? 'never'}`;
  return `${head}: ${limits.length ? limits.join(', ') : 'no limits'}${spend}`;
}
