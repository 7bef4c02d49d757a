/**
 * What every /account page shares: cookies, forms, CSRF, the session, the page policy.
 *
 * - The session cookie holds only an opaque id (`__Host-` prefixed: Secure, Path=/, no Domain;
 *   HttpOnly; SameSite=Lax), resolved through the session's events on each request.
 * - Every state-changing form carries a CSRF token (csrf-csrf's signed double submit), bound to
 *   the session, or before sign-in to a random browser id kept in its own cookie.
 * - Forms are urlencoded, 8 KiB at most; nothing here needs JavaScript but the usage chart.
 */
import cookieParser from 'cookie-parser';
import { doubleCsrf } from 'csrf-csrf';
import express, { type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../../core/private-files.js';
import { join } from 'node:path';
import type { Services } from '../../container.js';
import { sessionAccount } from '../../../../commands/sign-in/sign-in.handler.js';
import { AppError } from '../../../core/errors.js';
import { HEADER, NO_STORE } from '../../../web/response-headers.js';
import { html, page, sendHtml, type SafeHtml } from '../pages/html.js';
import {
  NEW_KEY_COOKIE,
  NEW_SECRET_COOKIE,
  NOTICE_COOKIE,
  NOTICE_MAX_AGE_MS,
  openNotice,
  openShownKey,
  openShownSecret,
  sealNotice,
  sealShownKey,
  sealShownSecret,
  type Notice,
  type ShownKey,
  type ShownSecret,
} from './account-notice.js';

export const SESSION_COOKIE = '__Host-scores.sid';
const BROWSER_COOKIE = '__Host-scores.b';
const CSRF_COOKIE = '__Host-scores.csrf';

/** The policy of the account pages: their own script (the chart) and style, forms posting here only. */
export const ACCOUNT_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * The key the CSRF tokens are signed with: kept in the data directory (created once, readable by
 * the service's user only), so that a restart does not void the forms open in browsers.
 */
function csrfSecret(dataDir: string): string {
  const file = join(dataDir, 'session-secret');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
    writeFileSync(file, randomBytes(32).toString('hex'), { flag: 'wx', mode: PRIVATE_FILE });
  }
  chmodSync(file, PRIVATE_FILE);
  return readFileSync(file, 'utf8').trim();
}

export interface Signed {
  account_id: string;
  session_id: string;
}

/** The signed-in account of a request (set by `loadSession`), or null. */
export const signedIn = (res: Response): Signed | null => (res.locals['signed'] as Signed | undefined) ?? null;

export interface AccountWeb {
  /** Parsers, CSRF check on POST, the session and the page headers, for every /account route. */
  middleware: express.RequestHandler[];
  /**
   * A fresh CSRF token for the forms of the page being rendered; with `keep`, the token the request
   * came with while it is valid (a refused form answered on the page: the page it came from still works).
   */
  csrfToken(req: Request, res: Response, keep?: boolean): string;
  /** Sets the session cookie (after a sign-in), and binds the next CSRF tokens to it. */
  startSession(req: Request, res: Response, sessionId: string, expiresAt: string): void;
  endSession(req: Request, res: Response): void;
  /** Tells the page the redirect leads to what the action did (account-notice.ts). */
  notify(res: Response, notice: Notice): void;
  /** The notice an action left for this page, once: the cookie is cleared as it is read. */
  takeNotice(req: Request, res: Response): Notice | null;
  /** Keeps a new key for the page the redirect leads to, which shows it once (account-notice.ts). */
  showKeyOnce(res: Response, shown: ShownKey): void;
  /** The new key to show, once: the cookie is cleared as it is read. */
  takeShownKey(req: Request, res: Response): ShownKey | null;
  /** Keeps a webhook's new signing secret for the page the redirect leads to, which shows it once. */
  showSecretOnce(res: Response, shown: ShownSecret): void;
  /** The webhook secret to show, once: the cookie is cleared as it is read. */
  takeShownSecret(req: Request, res: Response): ShownSecret | null;
}

const cookieBase = { httpOnly: true, secure: true, path: '/' } as const;

export function accountWeb(services: Services): AccountWeb {
  const secret = csrfSecret(services.config.dataDir);
  const { doubleCsrfProtection, generateCsrfToken } = doubleCsrf({
    getSecret: () => secret,
    getSessionIdentifier: (req) => (req.cookies as Record<string, string | undefined>)[SESSION_COOKIE] ?? (req.cookies as Record<string, string | undefined>)[BROWSER_COOKIE] ?? '',
    cookieName: CSRF_COOKIE,
    cookieOptions: { ...cookieBase, sameSite: 'strict' },
    getCsrfTokenFromRequest: (req) => ((req.body as Record<string, unknown> | undefined)?.['_csrf'] as string | undefined) ?? null,
    errorConfig: { statusCode: 403, message: 'This form has expired or did not come from this site', code: 'csrf' },
  });

  const browserId = (req: Request, res: Response, next: NextFunction) => {
    const cookies = req.cookies as Record<string, string | undefined>;
    if (!cookies[BROWSER_COOKIE] && !cookies[SESSION_COOKIE]) {
      const id = services.ids.next('', 24);
      res.cookie(BROWSER_COOKIE, id, { ...cookieBase, sameSite: 'lax' });
      cookies[BROWSER_COOKIE] = id;
    }
    next();
  };

  const loadSession = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const id = (req.cookies as Record<string, string | undefined>)[SESSION_COOKIE];
      const session = id ? await sessionAccount(services, id) : null;
      if (session && id) res.locals['signed'] = { account_id: session.account_id, session_id: id } satisfies Signed;
      next();
    } catch (err) {
      next(err);
    }
  };

  return {
    middleware: [
      helmet({ contentSecurityPolicy: false, xFrameOptions: { action: 'deny' } }),
      (_req, res, next) => {
        // Pages with a signed-in account's data are never cached, by the browser or on the way.
        res.setHeader(HEADER.cacheControl, NO_STORE);
        // A demo deployment says so on every page, the sign-in and account pages too (sendAccountPage).
        (res.locals as AccountLocals).demo = services.config.demo;
        (res.locals as AccountLocals).formActions = services.billing.checkoutOrigins;
        next();
      },
      cookieParser(),
      express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 20 }),
      browserId,
      doubleCsrfProtection,
      loadSession,
    ],
    csrfToken: (req, res, keep = false) => generateCsrfToken(req, res, { overwrite: !keep }),
    startSession(req, res, sessionId, expiresAt) {
      // Relative (Max-Age), not an absolute Expires: the browser's clock need not agree with the
      // service's (a pinned SCORES_NOW of a demo, a client clock off by days); the log expires it too.
      const maxAge = Math.max(0, Date.parse(expiresAt) - services.clock.now().getTime());
      res.cookie(SESSION_COOKIE, sessionId, { ...cookieBase, sameSite: 'lax', maxAge });
      (req.cookies as Record<string, string>)[SESSION_COOKIE] = sessionId;
    },
    endSession(req, res) {
      res.clearCookie(SESSION_COOKIE, { ...cookieBase, sameSite: 'lax' });
      delete (req.cookies as Record<string, string>)[SESSION_COOKIE];
    },
    notify(res, notice) {
      res.cookie(NOTICE_COOKIE, sealNotice(secret, notice), { ...cookieBase, sameSite: 'lax', maxAge: NOTICE_MAX_AGE_MS });
    },
    takeNotice(req, res) {
      const value = (req.cookies as Record<string, string | undefined>)[NOTICE_COOKIE];
      if (value === undefined) return null;
      res.clearCookie(NOTICE_COOKIE, { ...cookieBase, sameSite: 'lax' });
      return openNotice(secret, value);
    },
    ...shownOnce(secret),
  };
}

/** A new key or webhook secret across the redirect after its form: sealed, read once. */
function shownOnce(secret: string): Pick<AccountWeb, 'showKeyOnce' | 'takeShownKey' | 'showSecretOnce' | 'takeShownSecret'> {
  const keep =
    <T>(name: string, seal: (secret: string, value: T) => string) =>
    (res: Response, shown: T) =>
      res.cookie(name, seal(secret, shown), { ...cookieBase, sameSite: 'lax', maxAge: NOTICE_MAX_AGE_MS });
  const take =
    <T>(name: string, open: (secret: string, value: string | undefined) => T | null) =>
    (req: Request, res: Response): T | null => {
      const value = (req.cookies as Record<string, string | undefined>)[name];
      if (value === undefined) return null;
      res.clearCookie(name, { ...cookieBase, sameSite: 'lax' });
      return open(secret, value);
    };
  return {
    showKeyOnce: keep(NEW_KEY_COOKIE, sealShownKey),
    takeShownKey: take(NEW_KEY_COOKIE, openShownKey),
    showSecretOnce: keep(NEW_SECRET_COOKIE, sealShownSecret),
    takeShownSecret: take(NEW_SECRET_COOKIE, openShownSecret),
  };
}

/** An account page: the shared layout, the account pages' policy, never cached. */
interface AccountLocals {
  demo?: boolean;
  /** The card processor's payment pages a form may be sent on to (Billing.checkoutOrigins). */
  formActions?: readonly string[];
}

/** ACCOUNT_CSP, with the processor's payment pages among the places a form may lead (a purchase's 303 to Checkout). */
const accountCsp = (formActions: readonly string[] = []): string => (formActions.length === 0 ? ACCOUNT_CSP : ACCOUNT_CSP.replace("form-action 'self'", `form-action 'self' ${formActions.join(' ')}`));

export function sendAccountPage(res: Response, status: number, title: string, body: SafeHtml, head?: SafeHtml): void {
  const locals = res.locals as AccountLocals;
  sendHtml(res, status, page({ title: `${title} — Scores API`, body, head, demo: locals.demo === true }), { cacheControl: NO_STORE, csp: accountCsp(locals.formActions) });
}

/** The hidden field every state-changing form carries. */
export const csrfField = (token: string): SafeHtml => html`<input type="hidden" name="_csrf" value="${token}">`;

/** An error of the account pages as a page (never a stack trace), with its stable code. */
export function accountErrorPage(err: unknown, res: Response): void {
  const e = err as { code?: unknown; status?: unknown; statusCode?: unknown; message?: unknown };
  if (e?.code === 'csrf' || e?.code === 'EBADCSRFTOKEN') {
    sendAccountPage(res, 403, 'Form expired', html`<h1>This form has expired</h1><p>It did not carry this site's token (code <code>csrf</code>): nothing was changed. <a href="/account">Back to your account</a>.</p>`);
    return;
  }
  if (err instanceof AppError) {
    const status = err.status;
    sendAccountPage(res, status, 'Not done', html`<h1>${status === 404 ? 'Not found' : 'Not done'}</h1><p>${err.message}</p><p class="muted">Code <code>${err.code}</code>. <a href="/account">Back to your account</a>.</p>`);
    return;
  }
  throw err;
}
