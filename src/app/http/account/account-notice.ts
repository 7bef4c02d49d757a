/**
 * What an account action did, told on the page it returns to: a success or an error notice,
 * carried across the redirect after the form (POST, 303, GET) by a short-lived cookie signed with
 * the service's session secret, so it works without JavaScript and keeps the page's address as
 * it was. The page that shows a notice clears the cookie: it is shown once.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { gcmOpen, gcmSeal } from '../../../core/aes-gcm.js';
import { html, type SafeHtml } from '../pages/html.js';

export const NOTICE_COOKIE = '__Host-scores.notice';
/** Long enough for the redirect that follows the form; a notice is never shown on a later visit. */
export const NOTICE_MAX_AGE_MS = 60_000;
/** A notice is a sentence or two: a longer text is cut rather than refused. */
const MAX_TEXT = 600;

export interface Notice {
  kind: 'success' | 'error';
  text: string;
}

const mac = (secret: string, payload: string) => createHmac('sha256', secret).update(`notice\n${payload}`).digest('base64url');

/** The cookie's value: the notice, then its signature. */
export function sealNotice(secret: string, notice: Notice): string {
  const payload = Buffer.from(JSON.stringify({ kind: notice.kind, text: notice.text.slice(0, MAX_TEXT) })).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

/** The notice of a cookie value, or null when it is malformed or not signed with `secret`. */
export function openNotice(secret: string, value: string | undefined): Notice | null {
  const [payload, sig, extra] = (value ?? '').split('.');
  if (!payload || !sig || extra !== undefined) return null;
  const expected = Buffer.from(mac(secret, payload));
  const given = Buffer.from(sig);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const n = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<Notice>;
    if ((n.kind !== 'success' && n.kind !== 'error') || typeof n.text !== 'string') return null;
    return { kind: n.kind, text: n.text };
  } catch {
    return null;
  }
}

/** A notice as the page shows it: a status for a success, an alert for an error (read out at once). */
export function noticeHtml(n: Notice, code?: string): SafeHtml {
  return n.kind === 'success'
    ? html`<div class="notice ok" role="status" id="notice"><p><strong>Done.</strong> ${n.text}</p></div>`
    : html`<div class="notice error" role="alert" id="notice"><p><strong>Not done.</strong> ${n.text}${code ? html` (code <code>${code}</code>)` : ''}</p></div>`;
}

/**
 * A new API key, carried across the redirect after the form that made it (POST, 303, GET /account)
 * so that a reload neither submits the form again nor shows the key again. The key is a secret: the
 * cookie is sealed (AES-256-GCM under a key derived from the session secret), not only signed.
 */
export const NEW_KEY_COOKIE = '__Host-scores.new-key';

export interface ShownKey {
  key: string;
  prefix: string;
  name: string;
  /** What the action did besides, said before the key (a rotation). */
  lead?: string;
}

/**
 * A value sealed for one purpose (AES-256-GCM under a key derived from the session secret and the
 * purpose, which is also the additional data): `read` keeps what a sealed value may hold.
 */
function sealedBox<T>(purpose: string, read: (v: Partial<T>) => T | null) {
  const aad = Buffer.from(purpose);
  const key = (secret: string) => createHash('sha256').update(`${purpose}\n${secret}`).digest();
  return {
    seal: (secret: string, value: T): string => gcmSeal(key(secret), JSON.stringify(value), aad).toString('base64url'),
    /** The value of a cookie, or null when it is not one this service sealed for the purpose. */
    open: (secret: string, value: string | undefined): T | null => {
      if (!value) return null;
      const opened = gcmOpen(key(secret), Buffer.from(value, 'base64url'), aad);
      if (!('plain' in opened)) return null;
      try {
        return read(JSON.parse(opened.plain) as Partial<T>);
      } catch {
        return null;
      }
    },
  };
}

const keyBox = sealedBox<ShownKey>('new-key', (k) =>
  typeof k.key === 'string' && typeof k.prefix === 'string' && typeof k.name === 'string' ? { key: k.key, prefix: k.prefix, name: k.name, ...(typeof k.lead === 'string' ? { lead: k.lead } : {}) } : null,
);
export const sealShownKey = keyBox.seal;
export const openShownKey = keyBox.open;

/**
 * A webhook's new signing secret (a registration, a rotation), carried across the redirect to the
 * webhook's page as a new key is: sealed, shown once.
 */
export const NEW_SECRET_COOKIE = '__Host-scores.new-secret';

export interface ShownSecret {
  webhook_id: number;
  secret: string;
  /** What was done, said before the secret ("Registered.", "Rotated: the old secret signs beside it until …"). */
  lead: string;
}

const secretBox = sealedBox<ShownSecret>('new-webhook-secret', (v) =>
  typeof v.webhook_id === 'number' && typeof v.secret === 'string' && typeof v.lead === 'string' ? { webhook_id: v.webhook_id, secret: v.secret, lead: v.lead } : null,
);
export const sealShownSecret = secretBox.seal;
export const openShownSecret = secretBox.open;
