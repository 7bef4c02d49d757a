/**
 * The key forms of the account page: create, rotate, revoke. A new key is shown once, on the
 * page answering the form; another account's key is 404, as one that does not exist.
 */
import { issueKey, loadAccount, revokeKey, rotateKey } from '../../../../commands/manage-keys/keys.handler.js';
import type { EventStore } from '../../../core/event-store.port.js';
import { AppError, notFound } from '../../../core/errors.js';
import { backTo, formField, type AccountRequest } from './account-route.js';
import { renderAccount } from './overview.route.js';
import { newKeyNotice } from './overview.page.js';

/** The grace periods the rotate form offers, in hours. */
const GRACE_HOURS = [0, 24, 168];

async function ownKey(events: EventStore, accountId: string, keyId: string): Promise<void> {
  const account = await loadAccount(events, accountId);
  if (!account.keys.has(keyId)) throw notFound('No such key on this account');
}

export async function createKey(r: AccountRequest): Promise<void> {
  const issued = await issueKey(r.services, r.who.account_id);
  await r.services.feed.waitForHead();
  await renderAccount(r, newKeyNotice(issued.key, issued.prefix));
}

export async function rotateOwnKey(r: AccountRequest): Promise<void> {
  const keyId = String(r.req.params['id']);
  await ownKey(r.services.events, r.who.account_id, keyId);
  const hours = Number(formField(r.req, 'grace_hours') || '0');
  if (!GRACE_HOURS.includes(hours)) throw new AppError('bad_request', 'Choose a grace period offered on the page');
  const rotated = await rotateKey(r.services, keyId, hours * 3600);
  await r.services.feed.waitForHead();
  await renderAccount(r, newKeyNotice(rotated.key, rotated.prefix));
}

export async function revokeOwnKey(r: AccountRequest): Promise<void> {
  const keyId = String(r.req.params['id']);
  await ownKey(r.services.events, r.who.account_id, keyId);
  await revokeKey(r.services, keyId);
  await r.services.feed.waitForHead();
  backTo(r.res, 'keys');
}
