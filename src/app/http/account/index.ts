import type { Express } from 'express';
import type { Services } from '../../container.js';
import { accountWeb } from './account-web.js';
import { registerAccountRoutes } from './account.routes.js';
import { registerSignInRoutes } from './sign-in.routes.js';

/** Self-serve accounts: sign-in by emailed link, the account page, billing (docs/accounts.md). */
export function registerAccount(app: Express, services: Services): void {
  const web = accountWeb(services);
  registerSignInRoutes(app, services, web);
  registerAccountRoutes(app, services, web);
}
