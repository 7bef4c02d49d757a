/**
 * What a caller may ask of a metered call's price before it is run: only its price (a dry run),
 * and at most how much it may cost (a cap). REST sends them as the request headers `X-Dry-Run`
 * and `X-Max-Credits`, MCP as the tool arguments `dry_run` and `max_credits`; both faces read
 * them here, so they mean the same and are refused the same (docs/product.md, "Budgets").
 */
import { AppError, badRequest } from '../core/errors.js';
import { RATE_CARD, costOf, type RateKey } from '../domain/rate-card.js';

export interface CallBudget {
  /** Price the call and give its refusal, if any, without answering it or charging anything. */
  dryRun: boolean;
  /** The most the call may cost; null: no maximum. */
  maxCredits: number | null;
}

export const NO_BUDGET: CallBudget = Object.freeze({ dryRun: false, maxCredits: null });

export const DRY_RUN_HEADER = 'X-Dry-Run';
export const MAX_CREDITS_HEADER = 'X-Max-Credits';
/** The MCP arguments that carry the same, on every tool. */
export const DRY_RUN_ARGUMENT = 'dry_run';
export const MAX_CREDITS_ARGUMENT = 'max_credits';

/** A maximum above any call's price (200,000 rows at 3 credits) is no maximum, but still a number a client may send. */
const MAX_CREDITS_LIMIT = Number.MAX_SAFE_INTEGER;

/**
 * The budget a call's request asks for. Values come as REST sends them (header text) or as MCP
 * sends them (JSON); `names` says what the caller called them, for the refusal. A value that is
 * neither is a 400 naming it: a cap misread as none would let the call spend what it was meant to bound.
 */
export function budgetOf(dryRun: unknown, maxCredits: unknown, names: { dryRun: string; maxCredits: string }): CallBudget {
  if (dryRun === undefined && maxCredits === undefined) return NO_BUDGET;
  return { dryRun: dryRunOf(dryRun, names.dryRun), maxCredits: maxCreditsOf(maxCredits, names.maxCredits) };
}

function dryRunOf(value: unknown, name: string): boolean {
  if (value === undefined || value === false) return false;
  if (value === true) return true;
  const text = typeof value === 'string' ? value.trim().toLowerCase() : null;
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw badRequest(`${name} must be true or false`, { errors: [{ parameter: name, message: 'must be true or false' }] });
}

function maxCreditsOf(value: unknown, name: string): number | null {
  if (value === undefined) return null;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*[0-9]{1,16}\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_CREDITS_LIMIT) {
    throw badRequest(`${name} must be a whole number of credits, 0 or more`, { errors: [{ parameter: name, message: 'must be a whole number, 0 or more' }] });
  }
  return n;
}

/**
 * The units of `endpoint` (calls, rows, constituents) a budget allows: Infinity without a maximum.
 * A row-priced call reads at most one more row than this before it is refused.
 */
export function unitsAllowed(budget: CallBudget, endpoint: RateKey): number {
  const per = RATE_CARD[endpoint].credits;
  if (budget.maxCredits === null || per === 0) return Infinity;
  return Math.floor(budget.maxCredits / per);
}

/** 403 `cost_exceeds_max` when `units` of `endpoint` cost more than the budget allows; `exact` false: the call costs at least that. */
export function requireWithinBudget(budget: CallBudget, endpoint: RateKey, units: number, exact = true): void {
  const max = budget.maxCredits;
  if (max === null) return;
  const cost = costOf(endpoint, units);
  if (cost <= max) return;
  throw new AppError(
    'cost_exceeds_max',
    exact
      ? `This call costs ${cost} credits, more than the maximum you sent (${max}): nothing was charged. Narrow it, or raise the maximum.`
      : `This call costs at least ${cost} credits (its rows were counted only that far), more than the maximum you sent (${max}): nothing was charged. Narrow it, raise the maximum, or ask its exact price with a dry run.`,
    exact ? { max_credits: max, cost } : { max_credits: max, cost_at_least: cost },
  );
}

/**
 * A dry run's answer, thrown where the call would have been charged (MeteredCall.charge) and
 * caught by the face that serves the call: REST answers 204 with the price in headers, MCP a
 * result with the price. Not an AppError: it is no refusal.
 */
export class DryRunPriced extends Error {
  constructor(
    /** What the call would cost now. */
    readonly cost: number,
    /** `X-Credits-Remaining` now (nothing was charged). */
    readonly remaining: string,
    /** For a key with credit limits: what it could still spend after such a call (`X-Key-Budget-Remaining`). */
    readonly keyBudgetRemaining: number | null = null,
  ) {
    super(`dry run: ${cost} credits`);
    this.name = 'DryRunPriced';
  }
}

/** An MCP tool's result for a dry run (REST answers 204 with the same in headers). */
export interface DryRunResult {
  dry_run: true;
  /** What the call would cost now, in credits. */
  cost: number;
  /** The balance now (nothing was charged); null on an unmetered plan. */
  credits_remaining: number | null;
}
