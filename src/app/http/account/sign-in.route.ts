/**
 * Sign-in by emailed link (commands/sign-in), one handler per page or form: the form, the mail,
 * the confirmation, sign-out.
 *
 * Following the link shows a page that signs in with one button (a POST), not the GET itself:
 * mail scanners and link previews fetch links, and must not use a single-use link up.
 */
import type { NextFunction, Request, Response } from 'express';
import { RateLimiterRes, type RateLimiterMemory } from 'rate-limiter-flexible';
import type { Services } from '../../container.js';
import { inspectSignInLink, redeemSignInLink, requestSignInLink, signOut, type SignInMailBudget } from '../../../../commands/sign-in/sign-in.handler.js';
import { normalizeEmail } from '../../../domain/accounts/email-claim.js';
import { AppError } from '../../../core/errors.js';
import { clientAddress } from '../client-address.js';
import { accountErrorPage, sendAccountPage, signedIn, type AccountWeb } from './account-web.js';
import { checkEmailPage, confirmSignInPage, formAlert, linkNotValidPage, signInForm, tooManyRequests, welcomePage } from './sign-in.page.js';

/** One request to a sign-in route, with the limits of this process (sign-in.routes.ts). */
export interface SignInRequest {
  req: Request;
  res: Response;
  next: NextFunction;
  services: Services;
  web: AccountWeb;
  /** Sign-in requests per client address. */
  perClient: RateLimiterMemory;
  /** Mails per address asked for. */
  budget: SignInMailBudget;
}

export async function showSignInForm({ req, res, web }: SignInRequest): Promise<void> {
  if (signedIn(res)) return res.redirect(303, '/account');
  sendAccountPage(res, 200, 'Sign in', signInForm(web.csrfToken(req, res)));
}

export async function requestLink({ req, res, next, services, web, perClient, budget }: SignInRequest): Promise<void> {
  const raw = (req.body as Record<string, unknown>)['email'];
  let email: string;
  try {
    email = normalizeEmail(raw);
  } catch (err) {
    return sendAccountPage(res, 400, 'Sign in', signInForm(web.csrfToken(req, res), formAlert((err as Error).message), typeof raw === 'string' ? raw : ''));
  }
  try {
    await perClient.consume(clientAddress(req));
  } catch (limited) {
    if (!(limited instanceof RateLimiterRes)) return next(limited);
    const seconds = Math.ceil(limited.msBeforeNext / 1000);
    res.setHeader('Retry-After', String(seconds));
    return sendAccountPage(res, 429, 'Sign in', signInForm(web.csrfToken(req, res), tooManyRequests(seconds), email));
  }
  try {
    await requestSignInLink({ ...services, baseUrl: services.baseUrl(), budget }, email);
  } catch (err) {
    return next(err);
  }
  sendAccountPage(res, 200, 'Check your email', checkEmailPage(email));
}

export async function showLink({ req, res, services, web }: SignInRequest): Promise<void> {
  const token = String(req.params['token']);
  const link = await inspectSignInLink(services, token);
  if (link.status !== 'valid') return sendAccountPage(res, 404, 'Link not valid', linkNotValidPage(link.status));
  sendAccountPage(res, 200, 'Sign in', confirmSignInPage({ email: link.email, token, expiresAt: link.expires_at, csrf: web.csrfToken(req, res) }));
}

export async function redeemLink({ req, res, services, web }: SignInRequest): Promise<void> {
  try {
    const signed = await redeemSignInLink(services, String(req.params['token']));
    web.startSession(req, res, signed.session_id, signed.expires_at);
    if (!signed.new_key) return res.redirect(303, '/account');
    // The key works from the moment it is shown: the key read model has it first.
    await services.feed.waitForHead();
    sendAccountPage(res, 200, 'Welcome', welcomePage(signed.new_key));
  } catch (err) {
    if (err instanceof AppError) return accountErrorPage(err, res);
    throw err;
  }
}

export async function signOutSession({ req, res, services, web }: SignInRequest): Promise<void> {
  const signed = signedIn(res);
  if (signed) await signOut(services, signed.session_id);
  web.endSession(req, res);
  res.redirect(303, '/account/sign-in');
}
