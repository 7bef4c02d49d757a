/** The confirmation steps of the account's keys (confirm.page.ts): a revocation and a rotation, each naming the key and what happens to calls with it. */
import type { KeyState } from '../../../domain/accounts/account.state.js';
import { html, type SafeHtml } from '../pages/html.js';
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
