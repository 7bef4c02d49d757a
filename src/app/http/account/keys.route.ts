/**
 * The key forms of the account page: create (named), rotate and revoke, the last two confirmed on
 * a page naming the key and the consequence (GET) before the form that acts (POST). A new key is
 * shown once, on the account page the form redirects to (a reload neither sends the form again nor
 * shows the key again); another account's key is 404, as one that does not exist.
 */
import { issueKey, loadAccount, revokeKey, rotateKey, setKeyLimits } from '../../../../commands/manage-keys/keys.handler.js';
import { keysInForce } from '../../keys-in-force.js';
import type { KeyState } from '../../../domain/accounts/account.state.js';
import { AppError, notFound } from '../../../core/errors.js';
import type { KeyLimitsChange } from '../../../domain/accounts/key-limits.js';
import { RATE_KEYS } from '../../../domain/rate-card.js';
import { done, formField, type AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { limitsPage, limitsText, revokePage, rotatePage } from './keys.page.js';

/** The grace periods the rotate form offers, in hours. */
const GRACE_HOURS = [0, 24, 168];

async function ownKey(r: AccountRequest): Promise<KeyState> {
  const account = await loadAccount(r.services.events, r.who.account_id);
  const key = account.keys.get(String(r.req.params['id']));
  if (!key) throw notFound('No such key on this account');
  return key;
}

/** A key works (or is bounded) on every replica from the moment a page shows it (keys-in-force.ts). */
const keysProjected = (r: AccountRequest): Promise<void> => keysInForce(r.services, r.who.account_id);

function graceHours(value: unknown): number {
  const hours = Number(typeof value === 'string' && value !== '' ? value : '0');
  if (!GRACE_HOURS.includes(hours)) throw new AppError('bad_request', 'Choose a grace period offered on the page');
  return hours;
}

/**
 * A key's limits as the form gives them, every field (an empty one: none); the key decider checks
 * each (a limit a whole number from 1, an expiry ahead).
 */
function limitsOfForm(r: AccountRequest): KeyLimitsChange {
  const credits = (name: string) => (formField(r.req, name).trim() === '' ? null : Number(formField(r.req, name)));
  const operations = RATE_KEYS.filter((k) => formField(r.req, `op_${k}`) === 'on');
  return {
    daily_credit_limit: credits('daily_credit_limit'),
    monthly_credit_limit: credits('monthly_credit_limit'),
    expires_at: formField(r.req, 'expires_at').trim() === '' ? null : formField(r.req, 'expires_at'),
    scope: formField(r.req, 'read_only') === 'on' ? 'read_only' : 'all',
    operations: operations.length ? operations : null,
  };
}

/** The form's limits, unless it sets none (a key created without limits records none). */
function givenLimits(r: AccountRequest): KeyLimitsChange | undefined {
  const l = limitsOfForm(r);
  const none = l.daily_credit_limit === null && l.monthly_credit_limit === null && l.expires_at === null && l.scope === 'all' && l.operations === null;
  return none ? undefined : l;
}

export async function createKey(r: AccountRequest): Promise<void> {
  const issued = await issueKey(r.services, r.who.account_id, formField(r.req, 'name'), givenLimits(r));
  await keysProjected(r);
  r.web.showKeyOnce(r.res, { key: issued.key, prefix: issued.prefix, name: issued.name });
  r.res.redirect(303, '/account#new-key');
}

/** `GET /account/keys/:id/rotate?grace_hours=`: what the rotation does, before the form that rotates. */
export async function confirmRotate(r: AccountRequest): Promise<void> {
  const key = await ownKey(r);
  if (key.status !== 'active') throw new AppError('conflict', `${key.name} is ${key.status}; only an active key can be rotated`);
  const hours = graceHours(r.req.query['grace_hours']);
  const until = new Date(r.services.transportClock.now().getTime() + hours * 3_600_000).toISOString();
  sendAccountPage(r.res, 200, 'Rotate a key', rotatePage(key, hours, until, r.web.csrfToken(r.req, r.res)));
}

export async function rotateOwnKey(r: AccountRequest): Promise<void> {
  const key = await ownKey(r);
  const hours = graceHours(formField(r.req, 'grace_hours'));
  const rotated = await rotateKey(r.services, key.key_id, hours * 3600);
  await keysProjected(r);
  const old = hours === 0 ? 'stopped working' : `works until ${rotated.old_key_valid_until}`;
  r.web.showKeyOnce(r.res, { key: rotated.key, prefix: rotated.prefix, name: rotated.name, lead: `Rotated: the old key ${key.prefix}… ${old}.` });
  r.res.redirect(303, '/account#new-key');
}

/** `GET /account/keys/:id/limits`: the key's limits in a form naming what they do; only its POST changes them. */
export async function confirmLimits(r: AccountRequest): Promise<void> {
  const key = await ownKey(r);
  if (key.status === 'revoked') throw new AppError('conflict', `${key.name} is revoked; its limits no longer matter`);
  sendAccountPage(r.res, 200, 'Limits of a key', limitsPage(key, r.web.csrfToken(r.req, r.res)));
}

export async function setOwnKeyLimits(r: AccountRequest): Promise<void> {
  const key = await ownKey(r);
  const set = await setKeyLimits(r.services, key.key_id, limitsOfForm(r), r.who.account_id);
  await keysProjected(r);
  done(r, 'keys', set.changed ? `${key.name} (${key.prefix}…): limits set to ${limitsText(set.limits)}. Every API process enforces them within seconds.` : `${key.name} (${key.prefix}…) had these limits already.`);
}

/** `GET /account/keys/:id/revoke`: the key and what its revocation does, before the form that revokes. */
export async function confirmRevoke(r: AccountRequest): Promise<void> {
  const key = await ownKey(r);
  if (key.status === 'revoked') throw new AppError('conflict', `${key.name} is revoked already`);
  sendAccountPage(r.res, 200, 'Revoke a key', revokePage(key, r.web.csrfToken(r.req, r.res)));
}

export async function revokeOwnKey(r: AccountRequest): Promise<void> {
  const key = await ownKey(r);
  const { revoked } = await revokeKey(r.services, key.key_id);
  await keysProjected(r);
  done(r, 'keys', revoked ? `${key.name} (${key.prefix}…) is revoked: calls with it are refused from now on.` : `${key.name} (${key.prefix}…) was revoked already.`);
}
