/**
 * The one shape of every confirmation step of the account (a purchase, a plan change, the Pro
 * membership, a key revoked or rotated): a GET page that names the amount or the consequence,
 * "You are about to …", with Confirm (the form's POST, the only request that acts) and Cancel
 * (back to the account, nothing done). Works without JavaScript.
 */
import { html, type SafeHtml } from '../pages/html.js';
import { csrfField } from './account-web.js';

export interface Confirmation {
  title: string;
  /** What follows "You are about to": the act, with its amount or consequence. */
  about: SafeHtml;
  details?: SafeHtml;
  /** The POST that acts, with its hidden fields. */
  action: string;
  fields?: Record<string, string>;
  csrf: string;
  /** The Confirm button's label ("Confirm: pay $2.53 and upgrade"). */
  confirm: string;
  /** Where Cancel goes back to, on the account page. */
  cancel: string;
  /** A step that takes a payment: the simulated-billing notice when no money moves, where it is paid otherwise. */
  payment?: PaymentStep;
  /** A step that cannot be undone (a revocation): the Confirm button is red. */
  danger?: boolean;
  /** A field the owner must fill in to confirm (their address, to delete the account). */
  input?: { name: string; label: string; type: 'email' | 'text' };
}

/** Said on every payment step when the embedded billing adapter is in use (Billing.simulated). */
export const simulatedBillingNotice: SafeHtml = html`<div class="notice" role="note" id="simulated-billing"><p><strong>Simulated billing.</strong> This deployment uses the embedded billing adapter: no card is charged and no money moves. What you confirm is recorded in your ledger and invoices as if it were paid.</p></div>`;

/** How a payment step pays: simulated (the embedded billing), or through a card processor (Billing.processor). */
export interface PaymentStep {
  simulated: boolean;
  processor?: string | null;
}

/** Said on a payment step when a card processor takes the payment. */
const processorNotice = (processor: string): SafeHtml =>
  html`<div class="notice" role="note" id="processor-billing"><p><strong>Paid with ${processor}.</strong> Your saved card is charged; without one, Confirm takes you to ${processor}'s secure page to pay, then back here.</p></div>`;

export function confirmPage(c: Confirmation): SafeHtml {
  const hidden = Object.entries(c.fields ?? {}).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
  return html`<h1>${c.title}</h1>
${c.payment?.simulated ? simulatedBillingNotice : c.payment?.processor ? processorNotice(c.payment.processor) : ''}
<p id="consequence"><strong>You are about to ${c.about}.</strong></p>
${c.details ?? ''}
<form method="post" action="${c.action}" class="confirm">${csrfField(c.csrf)}${hidden}${
    c.input ? html`<p><label for="${c.input.name}">${c.input.label}</label><br><input id="${c.input.name}" name="${c.input.name}" type="${c.input.type}" required autocomplete="off"></p>` : ''
  }<button type="submit"${c.danger ? html` class="danger"` : ''}>${c.confirm}</button> <a class="button secondary" href="${c.cancel}">Cancel</a></form>`;
}
