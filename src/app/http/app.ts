import express, { type Express } from 'express';
import helmet from 'helmet';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseQuery } from 'node:querystring';
import type { Services } from '../container.js';
import { projectRoot } from '../../core/paths.js';
import { RegisterRoutes } from './generated/routes.js';
import { requestIdOf } from './authentication.js';
import { API_HEADERS, HEADER } from '../../web/response-headers.js';
import { provideHttpContext } from './http-context.js';
import { useLeanJson } from './json-response.js';
import { methodsByRoute, queryParamsByRoute, servedOpenApi } from './openapi.js';
import { problemHandler, sendProblem } from './problem.js';
import { compressBodies, dailyEtag, DAILY_FREE_PATHS } from './fair-use.js';
import { noStore, PRIVATE_PATH_PREFIXES } from './private-responses.js';
import { problemOf } from '../../web/problem.js';
import { registerPages } from './pages/index.js';
import { registerAccount } from './account/index.js';
import { mcpMethodNotAllowed, mcpRoute } from '../mcp/http.js';
import { observeRequests, registerMetricsRoutes } from './metrics.routes.js';

function loadOpenApi(): Record<string, unknown> {
  const file = join(projectRoot(), 'src/app/http/generated/swagger.json');
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** Where the public HTML pages live (helmet's browser headers apply there). */
const PAGE_PREFIXES = ['/stocks', '/license', '/docs'];

/**
 * The document's spelling of a /v1 path, read case-insensitively and without a trailing slash:
 * the declared literal segments with the request's parameter values, or null when no declared
 * path matches even so (an unknown path). Literal segments beat parameters, so `/v1/scores/HISTORY`
 * is `/v1/scores/history`, not the ticker route (which it matches as sent); between two equally
 * literal readings, the one spelt as sent.
 */
function canonicalV1Path(path: string, routes: readonly { route: string }[]): string | null {
  const given = path.replace(/\/$/, '').split('/');
  let best: { path: string; literals: number } | null = null;
  for (const { route } of routes) {
    const declared = route.split('/');
    if (declared.length !== given.length) continue;
    let literals = 0;
    const out: string[] = [];
    for (const [i, seg] of declared.entries()) {
      const sent = given[i]!;
      if (seg.startsWith(':')) {
        out.push(sent);
      } else if (seg.toLowerCase() === sent.toLowerCase()) {
        out.push(seg);
        literals++;
      } else break;
    }
    const candidate = out.join('/');
    if (out.length === declared.length && (!best || literals > best.literals || (literals === best.literals && candidate === path))) best = { path: candidate, literals };
  }
  return best?.path ?? null;
}

/** The HTTP face: tsoa routes, health, the OpenAPI document, and one problem+json error handler. */
export function createApp(services: Services): Express {
  const app = express();
  // One spelling per path, everywhere: express would also serve `/OpenAPI.json` and `/docs/`.
  // Set before the first route, when express makes its router.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.use(observeRequests(services)); // first: the access log and the request metrics see every request
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', services.config.trustProxy); // TRUST_PROXY; read through clientAddress (client-address.ts)
  // Every parameter is parsed (node's default stops at 1,000 and drops the rest silently): an
  // unknown one is refused (see rejectUnknownQuery), so none is ignored.
  app.set('query parser', (text: string) => parseQuery(text, '&', '=', { maxKeys: 0 }));
  useLeanJson(app);
  app.use((req, res, next) => {
    for (const [name, value] of API_HEADERS) res.setHeader(name, value);
    // Every response names its request: the id is on the ledger entry of the call's charge.
    res.setHeader(HEADER.requestId, requestIdOf(req, services.ids));
    next();
  });
  const openapi = loadOpenApi();
  const queryParams = queryParamsByRoute(openapi);
  provideHttpContext(app, {
    queries: services.queries,
    commands: {
      events: services.events,
      reads: services.reads,
      clock: services.clock,
      transportClock: services.transportClock,
      ids: services.ids,
      meter: services.meter,
      exportFiles: services.exportFiles,
      log: services.log,
      webhookSender: services.webhookSender,
      webhookAllowSubnets: services.config.webhookAllowSubnets,
    },
    meter: services.meter,
    ids: services.ids,
    queryParams,
  });
  // Every /v1 path answers the methods the OpenAPI document declares for it, and no other: HEAD
  // would run (and charge) the whole call for headers alone; other methods would fall through to
  // a 404 for a path that exists.
  const v1Routes = [...methodsByRoute(openapi)].map(([p, methods]) => ({ route: p, exact: new RegExp(`^${p.replace(/:[^/]+/g, '[^/]+')}$`), methods }));
  // Mounted without a path, which would match case-sensitively: `/V1/USAGE` is a /v1 path spelt otherwise.
  app.use((req, res, next) => {
    const path = req.originalUrl.split('?')[0]!;
    if (!/^\/v1(\/|$)/i.test(path)) return next();
    // One spelling per path, the document's, named in the 404. A case variant of a literal segment
    // can match a parameter as sent (`/v1/scores/HISTORY`, the ticker route): refused as well.
    const matched = v1Routes.filter((r) => r.exact.test(path));
    const canonical = canonicalV1Path(path, v1Routes);
    if (matched.length === 0 || canonical !== path) {
      const hint = canonical ? `; the path is ${canonical} (paths are case-sensitive, without a trailing slash)` : '';
      return sendProblem(res, problemOf('not_found', `no route for ${req.method} ${path}${hint}`, services.baseUrl()));
    }
    const allowed = [...new Set(matched.flatMap((r) => r.methods))].sort();
    if (req.method !== 'HEAD' && allowed.includes(req.method)) return next();
    res.setHeader(HEADER.allow, allowed.join(', '));
    const why = req.method === 'HEAD' ? ': a HEAD would be charged for data it does not deliver' : '';
    sendProblem(res, problemOf('method_not_allowed', `${req.method} is not served here; this /v1 endpoint answers ${allowed.join(', ')}${why}`, services.baseUrl()));
  });
  app.use(compressBodies());
  app.get(DAILY_FREE_PATHS, dailyEtag);
  app.use(PRIVATE_PATH_PREFIXES, noStore);
  // The API first: it takes almost all the traffic, and its routes share no path with the rest.
  RegisterRoutes(app);

  let served: { base: string; doc: Record<string, unknown> } | null = null;
  app.get('/openapi.json', (_req, res) => {
    const base = services.baseUrl();
    if (served?.base !== base) {
      served = { base, doc: servedOpenApi(openapi, base) };
    }
    res.json(served.doc);
  });
  registerMetricsRoutes(app, services); // GET /metrics (loopback, METRICS_ALLOW_SUBNETS) and /readyz
  // 503 while the read models are not following the log (a projector failed and waits to retry).
  app.get('/healthz', async (_req, res) => {
    const head = await services.events.headPosition();
    const projections = { ...services.runner.health, position: services.runner.position };
    res.status(projections.state === 'retrying' ? 503 : 200).json({
      status: projections.state === 'retrying' ? 'degraded' : 'ok',
      time: services.clock.now().toISOString(),
      log_position: head,
      projections,
    });
  });

  app.use(PAGE_PREFIXES, helmet({ contentSecurityPolicy: false, xFrameOptions: { action: 'deny' } }));
  registerPages(app, services);
  registerAccount(app, services);
  // A body is read here and by the webhook commands (JSON, 16 KiB: commands/manage-webhooks/webhooks.controller.ts).
  app.post('/mcp/http', ...mcpRoute(services, openapi));
  app.all('/mcp/http', mcpMethodNotAllowed(services));

  app.use((req, res) => {
    sendProblem(res, problemOf('not_found', `no route for ${req.method} ${req.path}`, services.baseUrl()));
  });
  app.use(problemHandler(() => services.baseUrl(), services.log, services.meter));
  return app;
}
