/**
 * A ledger's first decision: opening it. Pure, in the kernel because two features open a ledger in
 * the same atomic append as the account it belongs to (sign-in's first sign-in, the operator's
 * `keys create`), and the ledger's own decider decides `OpenLedger` with it.
 */
import { AppError, badRequest } from '../../core/errors.js';
import { isTier } from '../plans.js';
import type { OpenLedger } from './ledger.commands.js';
import type { LedgerEvent } from './ledger.events.js';
import { advanceTo, recorder } from './ledger.recorder.js';
import type { LedgerState } from './ledger.state.js';

const isText = (x: unknown): x is string => typeof x === 'string' && x.trim().length > 0;

/** Refuses malformed opening data (inputs may come from the CLI or HTTP). */
export function validateOpening(d: OpenLedger['data']): void {
  if (!isText(d.account_id)) throw badRequest('account_id is required');
  if (!isTier(d.tier)) throw badRequest(`Unknown tier ${String(d.tier)}`);
  if (typeof d.pro !== 'boolean') throw badRequest('pro must be true or false');
}

/**
 * `LedgerOpened` (overage off) and the period it opens in, chained from `state`, with the state
 * they fold to. Throws 400 for malformed data, 409 `conflict` for a ledger already open.
 */
export function openLedger(state: LedgerState, data: OpenLedger['data'], now: Date): { events: LedgerEvent[]; state: LedgerState } {
  validateOpening(data);
  if (state.opened) throw new AppError('conflict', `The ledger of account ${state.account_id ?? '?'} is already open`);
  const rec = recorder(state, now.toISOString());
  rec.emit('LedgerOpened', { account_id: data.account_id, tier: data.tier, pro: data.pro, allow_overage: false });
  advanceTo(rec, now);
  return { events: rec.events, state: rec.state };
}
