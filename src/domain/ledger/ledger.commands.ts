/**
 * What may be asked of an account's credit ledger, and the port through which other features ask
 * it: the ledger's decider (commands/ledger) decides these commands, its handler implements
 * `Ledger`, and the application hands that handler to the features that change a ledger (billing,
 * the invoice issuer) without their importing the ledger's slice.
 */
import type { Tier } from '../plans.js';
import type { RateKey } from '../rate-card.js';
import type { Channel, LedgerEvent } from './ledger.events.js';
import type { LedgerState } from './ledger.state.js';
import type { KeyBudget, KeySpend } from './key-spend.js';

export type OpenLedger = { type: 'OpenLedger'; data: { account_id: string; tier: Tier; pro: boolean } };
/**
 * `cost` comes from the rate card (`costOf`) once the call's rows are counted. `key_id`: the key
 * that made the call, kept in the appended event's metadata, not in the hashed line (callKeys).
 * `key_budget`: that key's credit limits, when it has any: a debit that would take the key past
 * one is refused (429 `key_budget_exhausted`, src/domain/ledger/key-spend.ts).
 */
export type DebitCredits = {
  type: 'DebitCredits';
  data: { request_id: string; endpoint: RateKey; channel: Channel; cost: number; key_id?: string; key_budget?: KeyBudget };
};
/** `price_cents` and `payment_ref` when sold on the account page (paid through the Billing port). */
export type PurchasePack = { type: 'PurchasePack'; data: { pack_id: string; credits: number; price_cents?: number; payment_ref?: string } };
export type SwitchOverage = { type: 'SwitchOverage'; data: { on: boolean } };
export type SetPlan = { type: 'SetPlan'; data: { tier: Tier } };
/** Falls back to free at the end of the current period; the key keeps working. */
export type CancelPlan = { type: 'CancelPlan'; data?: Record<string, never> };
export type SetPro = { type: 'SetPro'; data: { on: boolean } };
/**
 * Self-serve: a dearer plan at once. `amount_cents` is the prorated amount the user confirmed and
 * paid (`payment_ref`); it must still be the amount due now (`quoteUpgrade`).
 */
export type UpgradePlan = { type: 'UpgradePlan'; data: { tier: Tier; amount_cents: number; payment_ref: string } };
/** Self-serve: a cheaper plan from the end of the month (never prorated). */
export type DowngradePlan = { type: 'DowngradePlan'; data: { tier: Tier } };
/** Self-serve: the Pro membership at once, its prorated price confirmed and paid. */
export type StartPro = { type: 'StartPro'; data: { amount_cents: number; payment_ref: string } };

/** Records what the clock alone made due (finished months closed, a scheduled change applied): the monthly sweep of idle accounts. */
export type CloseFinishedMonths = { type: 'CloseFinishedMonths'; data?: Record<string, never> };

export type LedgerCommand = OpenLedger | DebitCredits | PurchasePack | SwitchOverage | SetPlan | CancelPlan | SetPro | UpgradePlan | DowngradePlan | StartPro | CloseFinishedMonths;

export interface LedgerOutcome {
  /** The account's state after the command (what `X-Credits-Remaining` is computed from). */
  state: LedgerState;
  events: LedgerEvent[];
  /** Global position of the last event written, null when the command wrote nothing. */
  position: string | null;
  /** A debit of a key with credit limits: what the key may still spend after it (`X-Key-Budget-Remaining`). */
  key_budget_remaining?: number | null;
}

/** The write side of the accounts' ledgers, as other features use it (commands/ledger/ledger.handler.ts implements it). */
export interface Ledger {
  /**
   * The account's current state, refreshed with anything appended since it was last read (a
   * process may answer from a read of the last 250 ms; `fresh` reads the stream's tail anyway, so
   * what another replica appended is in it: what a customer reads back, not what a debit decides on).
   */
  state(accountId: string, options?: { fresh?: boolean }): Promise<LedgerState>;
  /** Decides `command` on the account's ledger and appends what it produces. */
  execute(accountId: string, command: LedgerCommand): Promise<LedgerOutcome>;
  /**
   * Decides `command` as `execute` would now, key limits included, and appends nothing (a dry
   * run): the outcome it would have, or the refusal it would get, thrown.
   */
  quote(accountId: string, command: LedgerCommand): Promise<LedgerOutcome>;
  /** What each key of the account spent today and this month (fresh from the stream, as `state` with `fresh`). */
  keySpend(accountId: string): Promise<KeySpend>;
}
