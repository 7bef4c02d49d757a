import type { Express } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import type { Services } from '../../container.js';
import { SignInMailBudget } from '../../../../commands/sign-in/sign-in.handler.js';
import type { AccountWeb } from './account-web.js';
import { redeemLink, requestLink, showLink, showSignInForm, signOutSession, type SignInRequest } from './sign-in.route.js';

/**
 * Sign-in requests per client address (clientAddress), per process; see docs/accounts.md. The
 * mails per address are the handler's SignInMailBudget, which never answers 429: a limit keyed on
 * the address asked for would let anyone lock its owner out.
 */
export const SIGN_IN_CLIENT_LIMIT = { points: 10, duration: 60 * 60 } as const;

type SignInHandler = (r: SignInRequest) => Promise<void>;

/** The sign-in routes (sign-in.route.ts), in the order express matches them. */
const SIGN_IN_ROUTES: ReadonlyArray<readonly ['get' | 'post', string, SignInHandler]> = [
  ['get', '/account/sign-in', showSignInForm],
  ['post', '/account/sign-in', requestLink],
  ['get', '/account/sign-in/:token', showLink],
  ['post', '/account/sign-in/:token', redeemLink],
  ['post', '/account/sign-out', signOutSession],
];

export function registerSignInRoutes(app: Express, services: Services, web: AccountWeb): void {
  const limits = { perClient: new RateLimiterMemory(SIGN_IN_CLIENT_LIMIT), budget: new SignInMailBudget(services.transportClock) };
  for (const [method, path, handler] of SIGN_IN_ROUTES) {
    app[method](path, ...web.middleware, (req, res, next) => handler({ req, res, next, services, web, ...limits }).catch(next));
  }
}
