import type { Express, Request, RequestHandler, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { allProjections } from '../../../projections/index.js';
import type { AllowSubnets } from '../../domain/webhooks/address-policy.js';
import { KEY_PREFIX, SHOWN_PREFIX_LENGTH, shownPrefix } from '../../domain/accounts/api-keys.js';
import { API_KEY_HEADER } from '../../web/response-headers.js';
import type { Services } from '../container.js';
import { projectionLags, type LagSources } from '../metrics/projection-lag.js';
import { requestIdOf } from './authentication.js';
import { clientAddress } from './client-address.js';
import { PROBLEM_CODE_LOCAL } from './problem.js';

/** The label of a request no route matched (a 404, or an answer from a middleware): never the raw URL. */
const NO_ROUTE = '(none)';

/** Routes of the probes and the scraper, logged at debug rather than info. */
export const HEALTH_CHECK_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Runs first for every request: when its response is done, one access-log line at `info` (at
 * `debug` for the health checks) (request id, method, route pattern, status, duration, the key's
 * shown prefix: never the key) and the request's duration in `scores_http_request_duration_seconds`;
 * a 429 also counts in `scores_http_too_many_requests_total` under its problem code; then
 * `alsoWhenDone` (the request log's recording), given when the request began and its route pattern.
 */
export function observeRequests(services: Services, ...alsoWhenDone: readonly ((req: Request, res: Response, started: number, route: string) => void)[]): RequestHandler {
  const { log, metrics } = services;
  return (req, res, next) => {
    const start = performance.now();
    // One listener per request for everything done at its end: each listener cost a call about a microsecond.
    res.once('close', () => {
      const ms = performance.now() - start;
      const route = routeOf(req);
      for (const done of alsoWhenDone) done(req, res, start, route);
      const status = res.statusCode;
      const code = res.locals[PROBLEM_CODE_LOCAL] as string | undefined;
      metrics.request(req.method, route, status, ms / 1000);
      if (status === 429) metrics.tooManyRequests.inc({ code: code ?? 'unknown' });
      // Probes poll the health checks every few seconds: their lines would bury the calls.
      const level = HEALTH_CHECK_ROUTES.has(route) ? 'debug' : 'info';
      if (!log.isLevelEnabled(level)) return;
      log[level](
        {
          req_id: requestIdOf(req, services.ids),
          method: req.method,
          route,
          status,
          ms: Math.round(ms * 10) / 10,
          key_prefix: keyPrefixOf(req.header(API_KEY_HEADER)),
          ...(code ? { code } : {}),
          ...(res.writableFinished ? {} : { aborted: true }),
        },
        'request',
      );
    });
    next();
  };
}

/** The express route pattern that answered (`/v1/scores/:ticker`), or `(none)`. */
export function routeOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path === 'string') return req.baseUrl + path;
  return Array.isArray(path) ? req.baseUrl + path.join(',') : NO_ROUTE;
}

/**
 * What the access log shows of an `X-API-Key` header: the key's shown prefix (`sk_live_` and 6
 * characters, as the account page shows it), only when the header is long enough that the prefix
 * is a small part of it; `malformed` otherwise, so that no short or mistyped value is logged
 * whole. Null without the header.
 */
export function keyPrefixOf(header: string | undefined): string | null {
  if (header === undefined || header === '') return null;
  const key = header.trim();
  return key.startsWith(KEY_PREFIX) && key.length >= 2 * SHOWN_PREFIX_LENGTH ? shownPrefix(key) : 'malformed';
}

/** Headers by which a proxy names the client it forwards: X-Forwarded-For and its one-address cousins. */
const CLIENT_HEADERS = ['x-forwarded-for', 'x-real-ip', 'true-client-ip', 'cf-connecting-ip', 'x-client-ip', 'fastly-client-ip', 'x-cluster-client-ip'];

/**
 * Whether `GET /metrics` answers a request: its client address (clientAddress: the socket's peer,
 * or with `TRUST_PROXY` the address the trusted proxies name) is a loopback address (127.0.0.0/8,
 * ::1, their IPv4-mapped forms) or inside `METRICS_ALLOW_SUBNETS`. A proxy nobody configured may
 * stand on loopback too (nginx in front of the service on the same host, setting X-Real-IP), so
 * every address a client header names must pass as well, and a request with a `Forwarded` header
 * (not parsed here) is refused: a forged header can only make a caller less allowed. Anything that
 * does not parse as an IP address is refused.
 */
export function metricsCallerAllowed(client: string | undefined, allow: AllowSubnets, headers: Record<string, string | string[] | undefined> = {}): boolean {
  if (headers['forwarded'] !== undefined) return false;
  const named = CLIENT_HEADERS.flatMap((name) => [headers[name] ?? []].flat()).flatMap((value) => value.split(',').map((a) => a.trim()));
  return [client, ...named].every((address) => addressAllowed(address, allow));
}

function addressAllowed(address: string | undefined, allow: AllowSubnets): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  // ::ffff:10.1.2.3 (a dual-stack socket's view of an IPv4 peer) is judged as 10.1.2.3 too.
  const forms = [ipaddr.parse(address), ipaddr.process(address)];
  return forms.some((a) => a.range() === 'loopback' || allow.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits)));
}

/**
 * `GET /metrics` (Prometheus text; loopback and `METRICS_ALLOW_SUBNETS` only, anyone else gets
 * the 404 an unknown path gets) and `GET /readyz` (200 while every projection is within
 * `READY_MAX_LAG_EVENTS` of the log head, else 503; 503 too when the log or the read store cannot
 * be read). `/healthz` stays the liveness check (src/app/http/app.ts).
 */
export function registerMetricsRoutes(app: Express, services: Services): void {
  const { metrics, config } = services;
  metrics.collectProcessMetrics();
  const sources: LagSources = { events: services.events, reads: services.reads, clock: services.clock, projections: allProjections().map((p) => p.name) };
  // Where positions are not event numbers, counting stops one past the bound: enough to judge readiness.
  const cap = () => config.readyMaxLagEvents + 1;

  app.get('/metrics', async (req, res, next) => {
    // Answered as an unknown path is (404 not_found): a refusal would tell that the path exists.
    if (!metricsCallerAllowed(clientAddress(req), config.metricsAllowSubnets, req.headers)) return next();
    try {
      const { lags } = await projectionLags(sources, { cap: cap(), seconds: true });
      for (const lag of lags) {
        metrics.projectionLagEvents.set({ projection: lag.projection }, lag.events);
        metrics.projectionLagSeconds.set({ projection: lag.projection }, lag.seconds ?? 0);
      }
    } catch (err) {
      // No lag figures rather than stale ones: an alert on their absence catches an unreadable store.
      metrics.projectionLagEvents.reset();
      metrics.projectionLagSeconds.reset();
      services.log.warn({ err }, 'metrics: the projection lag could not be read');
    }
    res.setHeader('Cache-Control', 'no-store');
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.get('/readyz', async (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    const bound = config.readyMaxLagEvents;
    let state: Awaited<ReturnType<typeof projectionLags>>;
    try {
      state = await projectionLags(sources, { cap: cap(), seconds: false });
    } catch (err) {
      services.log.warn({ err }, 'readyz: the event log or the read store cannot be read');
      res.status(503).json({ status: 'unavailable', detail: 'the event log or the read store cannot be read', max_lag_events: bound });
      return;
    }
    const lagging = state.lags.filter((l) => l.events > bound).map((l) => l.projection);
    res.status(lagging.length ? 503 : 200).json({
      status: lagging.length ? 'lagging' : 'ready',
      waits_for: 'every projection within max_lag_events of the log head (the read models this process serves)',
      log_position: state.head,
      lag_events: Math.max(0, ...state.lags.map((l) => l.events)),
      max_lag_events: bound,
      lagging,
    });
  });
}
