import type { Express } from 'express';
import type { Services } from '../../container.js';

/** The charts endpoint that `GET /v1/coverage` replaced (spec: Coverage, Versioning). */
export const RETIRED_CHARTS_PATH = '/charts/v1/companies/with-social-heat-score';

/**
 * When the charts endpoint was deprecated, for the RFC 9745 `Deprecation` header (`@<epoch seconds>`).
 * The spec gives no date; this is the service's own record of it.
 */
export const CHARTS_DEPRECATED_AT = new Date('2025-01-01T00:00:00Z');

/**
 * Old clients keep working: a permanent redirect that keeps the method and the query string
 * (308), with the deprecation headers of RFC 9745 and RFC 8594's successor link.
 */
export function registerRetiredRoutes(app: Express, services: Services): void {
  app.all(RETIRED_CHARTS_PATH, (req, res) => {
    const base = services.baseUrl();
    const q = req.originalUrl.indexOf('?');
    const query = q === -1 ? '' : req.originalUrl.slice(q);
    res.setHeader('Deprecation', `@${Math.floor(CHARTS_DEPRECATED_AT.getTime() / 1000)}`);
    res.setHeader('Link', [`<${base}/v1/coverage>; rel="successor-version"`, `<${base}/docs#introduction>; rel="deprecation"; type="text/html"`].join(', '));
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.redirect(308, `${base}/v1/coverage${query}`);
  });
}
