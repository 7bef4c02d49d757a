/**
 * "Delete my account": a confirmation page that says what goes and what stays (GET), and the form
 * that forgets the account (POST), only when the signed-in owner types the account's address (or
 * its id, for an account without one). Then the session ends: the account can no longer be signed into.
 */
import { loadAccount } from '../../../../commands/manage-keys/keys.handler.js';
import { apiKeysProjection } from '../../../../projections/api-keys/api-keys.projection.js';
import { lastPositionFrom, projectedUpTo } from '../../../../queries/shared/read-your-writes.js';
import { accountStream } from '../../../domain/accounts/account.events.js';
import { AppError } from '../../../core/errors.js';
import { html } from '../pages/html.js';
import { forgetAccount } from '../../forget-account.js';
import { formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { confirmPage } from './confirm.page.js';

/** What the owner types to confirm: the address opened from the log, else the account id. */
async function confirmationOf(r: AccountRequest): Promise<{ value: string; label: string }> {
  const account = await loadAccount(r.services.events, r.who.account_id);
  const email = account.email === null ? null : await r.services.personal.open(r.who.account_id, account.email, 'email');
  return email === null ? { value: r.who.account_id, label: `Type your account id (${r.who.account_id}) to confirm` } : { value: email, label: 'Type your email address to confirm' };
}

export async function confirmDelete(r: AccountRequest): Promise<void> {
  const { label } = await confirmationOf(r);
  const page = confirmPage({
    title: 'Delete your account',
    about: html`delete your account <code>${r.who.account_id}</code>`,
    details: html`<ul>
<li>Every key stops at once (403 <code>key_forbidden</code>); your webhooks are deleted and receive nothing more.</li>
<li>Your email address and webhook secrets are forgotten: they were kept only encrypted under a key of your account, which is destroyed.</li>
<li>Your credit ledger and invoices stay, under the account id alone, as the books of the service require.</li>
<li>This cannot be undone. Signing in again with the same address later opens a new, empty account.</li>
</ul>`,
    action: '/account/delete',
    csrf: r.web.csrfToken(r.req, r.res),
    confirm: 'Confirm: delete my account',
    cancel: '/account#delete',
    danger: true,
    input: { name: 'confirm', label, type: 'text' },
  });
  sendAccountPage(r.res, 200, 'Delete your account', page);
}

export async function deleteOwnAccount(r: AccountRequest): Promise<void> {
  const expected = await confirmationOf(r);
  if (formField(r.req, 'confirm').trim().toLowerCase() !== expected.value.toLowerCase()) {
    throw new AppError('bad_request', `${expected.label.replace(' to confirm', '')} exactly as it is, to delete the account`);
  }
  const forgotten = await forgetAccount(r.services, r.who.account_id);
  // "Every key stops at once": the page answers once the key read model holds the revocations.
  await projectedUpTo(r.services.reads, apiKeysProjection.name, await lastPositionFrom(r.services.events, accountStream(r.who.account_id)));
  r.web.endSession(r.req, r.res);
  sendAccountPage(
    r.res,
    200,
    'Account deleted',
    html`<h1 id="deleted">Your account is deleted</h1><p>Account <code>${forgotten.account_id}</code> was forgotten at <time datetime="${forgotten.forgotten_at}">${forgotten.forgotten_at}</time>: ${forgotten.keys_revoked} key(s) revoked, ${forgotten.webhooks_deleted.length} webhook(s) deleted. Nothing more is sent to your address.</p><p><a href="/">Home</a></p>`,
  );
}
