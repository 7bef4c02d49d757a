/**
 * What every signed-in account route shares: the signed-in check, errors as pages, form fields,
 * and the way back to a section of the account page after a form.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Services } from '../../container.js';
import { AppError } from '../../../core/errors.js';
import { html } from '../pages/html.js';
import { accountErrorPage, sendAccountPage, signedIn, type AccountWeb, type Signed } from './account-web.js';

/** One request to an account route, for a signed-in session. */
export interface AccountRequest {
  req: Request;
  res: Response;
  who: Signed;
  services: Services;
  web: AccountWeb;
}

/** One page or form of the account: it answers, or throws an AppError that becomes a page. */
export type AccountHandler = (r: AccountRequest) => Promise<void>;

/** How a refused action answers (the account page with an error notice); absent: an error page. */
export type RefusalPage = (r: AccountRequest, err: AppError) => Promise<void>;

/** A route for a signed-in session: others are sent to sign in (a GET) or told they are signed out. */
export function signed(services: Services, web: AccountWeb, handler: AccountHandler, refused?: RefusalPage): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const who = signedIn(res);
    if (!who) {
      if (req.method === 'GET') return res.redirect(303, '/account/sign-in');
      return sendAccountPage(res, 401, 'Signed out', html`<h1>You are signed out</h1><p><a href="/account/sign-in">Sign in</a> to continue: nothing was changed.</p>`);
    }
    const r = { req, res, who, services, web };
    try {
      await handler(r);
    } catch (err) {
      if (!(err instanceof AppError)) return next(err);
      if (!refused) return accountErrorPage(err, res);
      await refused(r, err).catch(next);
    }
  };
}

/** A field of the posted form ('' when absent). */
export function formField(req: Request, name: string): string {
  const v = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof v === 'string' ? v : '';
}

/** After a form: back to its section of the account page, which tells what was done. */
export function done(r: AccountRequest, anchor: string, text: string): void {
  r.web.notify(r.res, { kind: 'success', text });
  r.res.redirect(303, `/account#${anchor}`);
}

/** Errors of the account pages are pages, with the stable code (a bad CSRF token included). */
export function accountErrors(err: unknown, _req: Request, res: Response, next: NextFunction): void {
  if (res.headersSent) return next(err);
  try {
    accountErrorPage(err, res);
  } catch {
    next(err);
  }
}
