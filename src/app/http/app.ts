import express, { type Express, type RequestHandler } from 'express';
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
import { queryParamsByRoute, servedOpenApi } from './openapi.js';
import { problemHandler, sendProblem } from './problem.js';
import { compressBodies, dailyEtag, DAILY_FREE_PATHS } from './fair-use.js';
import { noStore, PRIVATE_PATH_PREFIXES } from './private-responses.js';
import { problemOf } from '../../web/problem.js';
import { registerPages } from './pages/index.js';
import { withCodeSamples } from './pages/code-samples.js';
import { registerAccount } from './account/index.js';
import { registerStripeWebhook } from './billing/stripe-webhook.route.js';
import { observeRequests, registerMetricsRoutes } from './metrics.routes.js';
import { recordRequests } from './request-recording.js';
import { v1PathsAndMethods } from './v1-paths.js';
import { oneLayer } from './one-layer.js';
import { limitRequestsInFlight, trustedPeerOf } from './client-limits.js';
import { HEAD_STATEMENT } from '../../domain/ledger/ledger-head.js';
import { keysInForce } from '../keys-in-force.js';

/** Where the ledger's public keys are published. */
export const LEDGER_KEYS_PATH = '/.well-known/scores-ledger-keys.json';

function loadOpenApi(): Record<string, unknown> {
  const file = join(projectRoot(), 'src/app/http/generated/swagger.json');
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** Where the public HTML pages live (helmet's browser headers apply there). */
const PAGE_PREFIXES = ['/stocks', '/license', '/docs'];

/**
 * Routes the composition adds after the pages and the account pages, before the 404 (server.ts
 * mounts MCP so: src/app/mcp may use src/app/http, never the other way round).
 */
export type RouteMount = (app: Express, openapi: Record<string, unknown>) => void;

/** The HTTP face: tsoa routes, health, the OpenAPI document, the pages, `mounts`, and one problem+json error handler. */
export function createApp(services: Services, mounts: readonly RouteMount[] = []): Express {
  const app = express();
  configure(app, services);
  const openapi = loadOpenApi();
  provideContext(app, services, openapi);
  // What every request passes first, as one router layer: the access log, the request metrics and
  // the request log (first, so that they see every request; a key's calls recorded when they end),
  // the API headers, the client's requests in flight (a refusal costs nothing more), the /v1 path
  // and method check, compression.
  const inFlight = limitRequestsInFlight(services.config.clientLimits.maxRequestsInFlightPerClient, trustedPeerOf(app), () => services.baseUrl());
  app.use(oneLayer(observeRequests(services, ...recordRequests(services.recorder)), apiHeaders(services), inFlight, v1PathsAndMethods(services, openapi), compressBodies()));
  app.get(DAILY_FREE_PATHS, dailyEtag);
  app.use(PRIVATE_PATH_PREFIXES, noStore);
  // The API first: it takes almost all the traffic, and its routes share no path with the rest.
  RegisterRoutes(app);
  registerServiceRoutes(app, services, openapi);
  app.use(PAGE_PREFIXES, helmet({ contentSecurityPolicy: false, xFrameOptions: { action: 'deny' } }));
  registerPages(app, services);
  registerAccount(app, services);
  registerStripeWebhook(app, services);
  for (const mount of mounts) mount(app, openapi);

  app.use((req, res) => {
    sendProblem(res, problemOf('not_found', `no route for ${req.method} ${req.path}`, services.baseUrl()));
  });
  app.use(problemHandler(() => services.baseUrl(), services.log, services.meter));
  return app;
}

/** The settings and lean JSON. */
function configure(app: Express, services: Services): void {
  // One spelling per path, everywhere: express would also serve `/OpenAPI.json` and `/docs/`.
  // Set before the first route, when express makes its router.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', services.config.trustProxy); // TRUST_PROXY; read through clientAddress (client-address.ts)
  // Every parameter is parsed (node's default stops at 1,000 and drops the rest silently): an
  // unknown one is refused (see rejectUnknownQuery), so none is ignored.
  app.set('query parser', (text: string) => parseQuery(text, '&', '=', { maxKeys: 0 }));
  useLeanJson(app);
}

/** The fixed API headers, and the request's id. */
function apiHeaders(services: Services): RequestHandler {
  return (req, res, next) => {
    for (const [name, value] of API_HEADERS) res.setHeader(name, value);
    // Every response names its request: the id is on the ledger entry of the call's charge.
    res.setHeader(HEADER.requestId, requestIdOf(req, services.ids));
    next();
  };
}

/** What tsoa's controllers are given (src/app/http/ioc.ts): the queries' and the commands' ports. */
function provideContext(app: Express, services: Services, openapi: Record<string, unknown>): void {
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
      personal: services.personal,
      webhookAllowSubnets: services.config.webhookAllowSubnets,
      keysInForce: (accountId) => keysInForce(services, accountId),
    },
    meter: services.meter,
    freeAnswers: services.freeAnswers,
    ids: services.ids,
    queryParams,
  });
}

/** The service's own documents: /openapi.json, the ledger keys, /metrics, /readyz and /healthz. */
function registerServiceRoutes(app: Express, services: Services, openapi: Record<string, unknown>): void {
  let served: { base: string; doc: Record<string, unknown> } | null = null;
  app.get('/openapi.json', (_req, res) => {
    const base = services.baseUrl();
    if (served?.base !== base) {
      served = { base, doc: withCodeSamples(servedOpenApi(openapi, base), base) };
    }
    res.json(served.doc);
  });
  // The public keys of signed ledger heads (docs/ledger.md, "Signed heads"): free, no key, cacheable.
  app.get(LEDGER_KEYS_PATH, (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.json({ statement: HEAD_STATEMENT, keys: services.keyring.keys });
  });
  registerMetricsRoutes(app, services); // GET /metrics (loopback, METRICS_ALLOW_SUBNETS) and /readyz
  // 503 while the read models are not following the log (a projector failed and waits to retry).
  app.get('/healthz', async (_req, res) => {
    const head = await services.events.headPosition();
    const projections = { ...services.feed.health, position: services.feed.position };
    res.status(projections.state === 'retrying' ? 503 : 200).json({
      status: projections.state === 'retrying' ? 'degraded' : 'ok',
      time: services.clock.now().toISOString(),
      log_position: head,
      projections,
    });
  });
}
