/**
 * Forgetting an account (docs/ledger.md, "Forgetting an account"): the one workflow behind
 * `scores accounts forget` and the account page's "Delete my account". In this order, each step
 * safe to run again after a crash between two of them:
 * 1. its webhooks deleted (no delivery is signed for it again);
 * 2. its keys revoked, `AccountForgotten`, its address released, in one append;
 * 3. its personal-data key destroyed: every address and secret sealed for it stops opening;
 * 4. the mails the service kept for its address (the file outbox) removed;
 * 5. its calls in the request log deleted (src/core/request-log.ts).
 * The ledger, its signed heads and the invoices stay under the account id, exact and auditable.
 */
import { deleteAccountWebhooks } from '../../commands/manage-webhooks/webhooks.handler.js';
import { loadAccount, recordForgetting } from '../../commands/manage-keys/keys.handler.js';
import { notFound } from '../core/errors.js';
import type { Services } from './container.js';

export interface ForgottenAccount {
  account_id: string;
  /** When the account was recorded forgotten (the first run's instant on a repeat). */
  forgotten_at: string;
  keys_revoked: number;
  webhooks_deleted: number[];
  mails_removed: number;
  /** Calls of the request log deleted. */
  requests_deleted: number;
  /** True when an earlier run had recorded it already (this one finished what was left). */
  already: boolean;
}

export async function forgetAccount(services: Services, accountId: string): Promise<ForgottenAccount> {
  const before = await loadAccount(services.events, accountId);
  if (!before.exists) throw notFound(`no account ${accountId}`);
  // Opened while the key still opens it: the claim to release and the mails to remove are found by it.
  const email = before.email === null ? null : await services.personal.open(accountId, before.email, 'email');
  const webhooks = await deleteAccountWebhooks(services, accountId);
  const { keys_revoked } = await recordForgetting(services, accountId, email);
  await services.personal.forget(accountId);
  const mails = email === null ? 0 : await services.mailer.forgetRecipient(email);
  // After the keys are revoked: no call of the account is recorded again.
  const requests = await services.requestLog.forget(accountId);
  const after = await loadAccount(services.events, accountId);
  return {
    account_id: accountId,
    forgotten_at: after.forgotten_at!,
    keys_revoked,
    webhooks_deleted: webhooks,
    mails_removed: mails,
    requests_deleted: requests,
    already: before.forgotten_at !== null,
  };
}
