import type { Express } from 'express';
import type { Services } from '../../container.js';
import { registerDocsPages } from './docs.page.js';
import { registerGuidePages } from './guides.page.js';
import { registerHomePage } from './home.page.js';
import { registerLicencePage } from './license.page.js';
import { registerLlmsTxt } from './llms-txt.page.js';
import { registerRetiredRoutes } from './retired.routes.js';
import { registerStockPage } from './stock.page.js';
import { SITE_CSS } from './site.css.js';

/**
 * The public, key-less pages: the home page (what the data is, an example, the prices), each
 * stock's citation page, the licence terms, the docs (Redoc on /openapi.json, and the error
 * reference problem `type`s link to), the guides (/docs/<slug>, rendered from docs/ at build time), /llms.txt (the map for agents), and the redirect of the retired charts path. Registered
 * before the tsoa routes.
 */
export function registerPages(app: Express, services: Services): void {
  // The stylesheet's URL carries its content hash (SITE_CSS_PATH), so a year's cache is safe.
  app.get('/assets/site.css', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=31536000, immutable');
    res.type('text/css').send(SITE_CSS);
  });
  registerHomePage(app, services);
  registerStockPage(app, services);
  registerLicencePage(app, services);
  registerDocsPages(app, services);
  registerGuidePages(app, services);
  registerLlmsTxt(app, services);
  registerRetiredRoutes(app, services);
}
