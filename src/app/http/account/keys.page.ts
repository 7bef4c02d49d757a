/**
 * The confirmation steps of the account's keys (confirm.page.ts): a revocation and a rotation,
 * each naming the key and what happens to calls with it; a key's limits, in a form of their own.
 */
import type { KeyState } from '../../../domain/accounts/account.state.js';
import type { KeyLimits } from '../../../domain/accounts/key-limits.js';
import { RATE_KEYS } from '../../../domain/rate-card.js';
import { html, type SafeHtml } from '../pages/html.js';
import { csrfField } from './account-web.js';
import { confirmPage } from './confirm.page.js';

/** A key as the pages name it: its name and its clear prefix. */
export const keyLabel = (k: KeyState): SafeHtml => html`<strong>${k.name}</strong> (<code>${k.prefix}…</code>)`;

export function revokePage(k: KeyState, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Revoke a key',
    about: html`revoke the key ${keyLabel(k)}`,
    details: html`<p>Every call with it is refused (403 <code>key_forbidden</code>) from the moment you confirm, and a key it replaced that still works in its grace period stops too. This cannot be undone: a program that uses this key needs another one.</p>`,
    action: `/account/keys/${k.key_id}/revoke`,
    csrf,
    confirm: `Confirm: revoke ${k.name}`,
    cancel: '/account#keys',
    danger: true,
  });
}

/** A rotation: a new key in its place; the old one works until `graceUntil` (now: at once). */
export function rotatePage(k: KeyState, hours: number, graceUntil: string, csrf: string): SafeHtml {
  return confirmPage({
    title: 'Rotate a key',
    about: html`replace the key ${keyLabel(k)} with a new one; the old key ${hours === 0 ? 'stops working at once' : html`keeps working until <time datetime="${graceUntil}">${graceUntil}</time> (${hours === 24 ? '24 hours' : '7 days'})`}`,
    details: html`<p>The new key is named ${k.name} too, and is shown once, on the page that answers. Put it in your programs before the old key stops.</p>`,
    action: `/account/keys/${k.key_id}/rotate`,
    fields: { grace_hours: String(hours) },
    csrf,
    confirm: `Confirm: rotate ${k.name}`,
    cancel: '/account#keys',
  });
}

const credits = (n: number) => n.toLocaleString('en-US');

/** A key's limits in words ("1,000 credits a day · read-only"), or "none". */
export function limitsText(l: KeyLimits): string {
  const parts = [
    l.daily_credit_limit === null ? null : `${credits(l.daily_credit_limit)} credits a day`,
    l.monthly_credit_limit === null ? null : `${credits(l.monthly_credit_limit)} credits a month`,
    l.expires_at === null ? null : `expires ${l.expires_at}`,
    l.scope === 'read_only' ? 'read-only' : null,
    l.operations === null ? null : `only ${l.operations.join(', ')}`,
  ].filter((p): p is string => p !== null);
  return parts.length ? parts.join(' · ') : 'none';
}

/**
 * The fields of a key's limits, filled with `l` (empty: none), shared by the "Create a key" form
 * and a key's limits page. `id` prefixes the fields' ids (two forms may be on one page).
 */
export function limitFields(l: KeyLimits, id: string): SafeHtml {
  const num = (name: string, label: string, value: number | null) =>
    html`<p><label for="${id}-${name}">${label}</label><br><input id="${id}-${name}" name="${name}" type="number" min="1" step="1" inputmode="numeric" value="${value === null ? '' : String(value)}" placeholder="no limit"></p>`;
  const ops = RATE_KEYS.map(
    (k) => html`<label class="op"><input type="checkbox" name="op_${k}" value="on"${l.operations?.includes(k) ? html` checked` : ''}> <code>${k}</code></label> `,
  );
  return html`${num('daily_credit_limit', 'Credits per day (UTC)', l.daily_credit_limit)}${num('monthly_credit_limit', 'Credits per month (UTC)', l.monthly_credit_limit)}
<p><label for="${id}-expires_at">Expires at (UTC)</label><br><input id="${id}-expires_at" name="expires_at" type="datetime-local" value="${l.expires_at ? l.expires_at.slice(0, 16) : ''}"></p>
<p><label><input type="checkbox" name="read_only" value="on"${l.scope === 'read_only' ? html` checked` : ''}> Read-only: data and usage reads only, no webhook or key changes</label></p>
<fieldset><legend>Only these operations (none ticked: all)</legend>${ops}</fieldset>`;
}

/** `GET /account/keys/:id/limits`: the key's limits, in a form; Confirm sets them, Cancel changes nothing. */
export function limitsPage(k: KeyState, csrf: string): SafeHtml {
  return html`<h1>Limits of a key</h1>
<p id="consequence"><strong>You are about to set the limits of the key ${keyLabel(k)}</strong> (now: ${limitsText(k.limits)}).</p>
<p>A call that would take the key past a credit limit is refused (429 <code>key_budget_exhausted</code>) and charged nothing; the account's other keys are not affected. After its expiry the key is refused (403 <code>key_expired</code>); a read-only key, or one limited to some operations, is refused any other call (403 <code>key_scope_forbidden</code>). Every API process enforces the change within seconds. Leave a field empty for no limit.</p>
<form method="post" action="/account/keys/${k.key_id}/limits" class="confirm">${csrfField(csrf)}${limitFields(k.limits, 'limits')}
<button type="submit">Confirm: set the limits of ${k.name}</button> <a class="button secondary" href="/account#keys">Cancel</a></form>`;
}
