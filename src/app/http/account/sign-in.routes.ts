/**
 * Sign-in by emailed link (commands/sign-in): the form, the mail, the confirmation, sign-out.
 *
 * Following the link shows a page that signs in with one button (a POST), not the GET itself:
 * mail scanners and link previews fetch links, and must not use a single-use link up.
 */
import type { Express, Request, Response } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Services } from '../../container.js';
import {
  inspectSignInLink,
  redeemSignInLink,
  requestSignInLink,
  signOut,
  SignInMailBudget,
  SIGN_IN_LINK_MINUTES,
  SIGN_IN_MAILS_PER_ADDRESS,
} from '../../../../commands/sign-in/sign-in.handler.js';
import { AppError } from '../../../core/errors.js';
import { normalizeEmail } from '../../../domain/accounts/email-claim.js';
import { clientAddress } from '../client-address.js';
import { html, type SafeHtml } from '../pages/html.js';
import { accountErrorPage, csrfField, sendAccountPage, signedIn, type AccountWeb } from './account-web.js';
import { newKeyNotice } from './account.page.js';

/**
 * Sign-in requests per client address (clientAddress), per process; see docs/accounts.md. The
 * mails per address are the handler's SignInMailBudget, which never answers 429: a limit keyed on
 * the address asked for would let anyone lock its owner out.
 */
export const SIGN_IN_CLIENT_LIMIT = { points: 10, duration: 60 * 60 } as const;

function signInForm(token: string, message?: SafeHtml, email = ''): SafeHtml {
  return html`<h1>Sign in</h1>
<p>Enter your email address: we send you a link that signs you in. The first time, it creates your developer account and a free API key (no card needed).</p>
${message ?? ''}
<form method="post" action="/account/sign-in">
${csrfField(token)}
<p><label for="email">Email address</label><br><input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${email}" size="32"></p>
<p><button type="submit">Email me a sign-in link</button></p>
</form>`;
}

export function registerSignInRoutes(app: Express, services: Services, web: AccountWeb): void {
  const perClient = new RateLimiterMemory(SIGN_IN_CLIENT_LIMIT);
  const budget = new SignInMailBudget(services.clock);

  app.get('/account/sign-in', ...web.middleware, (req: Request, res: Response) => {
    if (signedIn(res)) return res.redirect(303, '/account');
    sendAccountPage(res, 200, 'Sign in', signInForm(web.csrfToken(req, res)));
  });

  app.post('/account/sign-in', ...web.middleware, async (req: Request, res: Response, next) => {
    const raw = (req.body as Record<string, unknown>)['email'];
    let email: string;
    try {
      email = normalizeEmail(raw);
    } catch (err) {
      const message = html`<p class="note" role="alert">${(err as Error).message}</p>`;
      return sendAccountPage(res, 400, 'Sign in', signInForm(web.csrfToken(req, res), message, typeof raw === 'string' ? raw : ''));
    }
    try {
      await perClient.consume(clientAddress(req));
    } catch (limited) {
      if (!(limited instanceof RateLimiterRes)) return next(limited);
      const seconds = Math.ceil(limited.msBeforeNext / 1000);
      res.setHeader('Retry-After', String(seconds));
      const message = html`<p class="note" role="alert">Too many sign-in emails were asked for from your network address (code <code>rate_limited</code>). Try again in ${Math.ceil(seconds / 60)} minutes.</p>`;
      return sendAccountPage(res, 429, 'Sign in', signInForm(web.csrfToken(req, res), message, email));
    }
    try {
      await requestSignInLink({ ...services, baseUrl: services.baseUrl(), budget }, email);
    } catch (err) {
      return next(err);
    }
    // The same page whether or not the address has an account, and whether or not a mail went.
    sendAccountPage(
      res,
      200,
      'Check your email',
      html`<h1>Check your email</h1><p>If <strong>${email}</strong> can receive mail, a sign-in link is on its way. It works once, within ${SIGN_IN_LINK_MINUTES} minutes.</p><p class="muted">Nothing arrived? Check the spam folder, or <a href="/account/sign-in">ask for another link</a>. An address gets at most ${SIGN_IN_MAILS_PER_ADDRESS} links in ${SIGN_IN_LINK_MINUTES} minutes: the newest one you received works.</p>`,
    );
  });

  app.get('/account/sign-in/:token', ...web.middleware, async (req: Request, res: Response, next) => {
    try {
      const token = String(req.params['token']);
      const link = await inspectSignInLink(services, token);
      if (link.status !== 'valid') {
        return sendAccountPage(res, 404, 'Link not valid', html`<h1>This link does not sign in</h1><p>It was ${link.status === 'unknown' ? 'not sent by us' : link.status === 'used' ? 'used already' : 'sent more than 15 minutes ago'}. <a href="/account/sign-in">Ask for a new one</a>.</p>`);
      }
      sendAccountPage(
        res,
        200,
        'Sign in',
        html`<h1>Sign in as ${link.email}</h1>
<form method="post" action="/account/sign-in/${token}">${csrfField(web.csrfToken(req, res))}<p><button type="submit">Sign in</button></p></form>
<p class="muted">The link works once, until ${link.expires_at.slice(11, 16)} UTC.</p>`,
      );
    } catch (err) {
      next(err);
    }
  });

  app.post('/account/sign-in/:token', ...web.middleware, async (req: Request, res: Response, next) => {
    try {
      const signed = await redeemSignInLink(services, String(req.params['token']));
      web.startSession(req, res, signed.session_id, signed.expires_at);
      if (!signed.new_key) return res.redirect(303, '/account');
      // The key works from the moment it is shown: the key read model has it first.
      await services.runner.waitForHead();
      sendAccountPage(
        res,
        200,
        'Welcome',
        html`<h1>Welcome to Scores API</h1><p>Your developer account is ready, on the free tier.</p>${newKeyNotice(signed.new_key.key, signed.new_key.prefix)}<p><a href="/account">Continue to your account</a></p>`,
      );
    } catch (err) {
      if (err instanceof AppError) return accountErrorPage(err, res);
      next(err);
    }
  });

  app.post('/account/sign-out', ...web.middleware, async (req: Request, res: Response, next) => {
    try {
      const signed = signedIn(res);
      if (signed) await signOut(services, signed.session_id);
      web.endSession(req, res);
      res.redirect(303, '/account/sign-in');
    } catch (err) {
      next(err);
    }
  });
}
