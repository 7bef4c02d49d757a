/** The pages of sign-in by emailed link: the form, "check your email", the link's confirmation, the welcome with the first key. */
import { SIGN_IN_LINK_MINUTES, SIGN_IN_MAILS_PER_ADDRESS } from '../../../../commands/sign-in/sign-in.handler.js';
import { html, type SafeHtml } from '../pages/html.js';
import { instant } from '../pages/time.js';
import { csrfField } from './account-web.js';
import { newKeyNotice } from './overview.page.js';

export function signInForm(token: string, message?: SafeHtml, email = ''): SafeHtml {
  return html`<h1>Sign in</h1>
<p>Enter your email address: we send you a link that signs you in. The first time, it creates your developer account and a free API key (no card needed).</p>
${message ?? ''}
<form method="post" action="/account/sign-in">
${csrfField(token)}
<p><label for="email">Email address</label><br><input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${email}" size="32"></p>
<p><button type="submit">Email me a sign-in link</button></p>
</form>`;
}

/** A refusal above the form, read out by screen readers. */
export const formAlert = (message: SafeHtml | string): SafeHtml => html`<p class="note" role="alert">${message}</p>`;

export const tooManyRequests = (seconds: number): SafeHtml =>
  formAlert(html`Too many sign-in emails were asked for from your network address (code <code>rate_limited</code>). Try again in ${Math.ceil(seconds / 60)} minutes.`);

/** The same page whether or not the address has an account, and whether or not a mail went. */
export const checkEmailPage = (email: string): SafeHtml =>
  html`<h1>Check your email</h1><p>If <strong>${email}</strong> can receive mail, a sign-in link is on its way. It works once, within ${SIGN_IN_LINK_MINUTES} minutes.</p><p class="muted">Nothing arrived? Check the spam folder, or <a href="/account/sign-in">ask for another link</a>. An address gets at most ${SIGN_IN_MAILS_PER_ADDRESS} links in ${SIGN_IN_LINK_MINUTES} minutes: the newest one you received works.</p>`;

export const linkNotValidPage = (status: 'unknown' | 'used' | 'expired'): SafeHtml =>
  html`<h1>This link does not sign in</h1><p>It was ${status === 'unknown' ? 'not sent by us' : status === 'used' ? 'used already' : 'sent more than 15 minutes ago'}. <a href="/account/sign-in">Ask for a new one</a>.</p>`;

/** The link's page: one button signs in (a POST), so that fetching the link does not use it. */
export const confirmSignInPage = (v: { email: string; token: string; expiresAt: string; csrf: string }): SafeHtml =>
  html`<h1>Sign in as ${v.email}</h1>
<form method="post" action="/account/sign-in/${v.token}">${csrfField(v.csrf)}<p><button type="submit">Sign in</button></p></form>
<p class="muted">The link works once, until ${instant(v.expiresAt)}.</p>`;

export const welcomePage = (key: { key: string; prefix: string; name: string }): SafeHtml =>
  html`<h1>Welcome to Scores API</h1><p>Your developer account is ready, on the free tier.</p>${newKeyNotice(key.key, key.prefix, key.name)}<p><a href="/account">Continue to your account</a></p>`;
