import express, { type Express } from 'express';
import helmet from 'helmet';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Services } from '../container.js';
import { projectRoot } from '../core/paths.js';
import { RegisterRoutes } from './generated/routes.js';
import { requestIdOf, type AuthedRequest } from './authentication.js';
import { remainingFor } from './metering.js';
import { problemHandler, problemOf, sendProblem } from './problem.js';
import { registerPages } from './pages/index.js';
import { mcpHandler, mcpMethodNotAllowed } from '../mcp/http.js';

function loadOpenApi(): Record<string, unknown> {
  const file = join(projectRoot(), 'src/http/generated/swagger.json');
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** The HTTP face: tsoa routes, health, the OpenAPI document, and one problem+json error handler. */
export function createApp(services: Services): Express {
  const app = express();
  app.locals['services'] = services;
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', 'loopback');
  app.use(helmet({ contentSecurityPolicy: false }));
  app.use(express.json({ limit: '64kb' }));
  // Every response names its request: the id is on the ledger entry of the call's charge.
  app.use((req, res, next) => {
    res.setHeader('X-Request-Id', requestIdOf(req as AuthedRequest));
    next();
  });

  const openapi = loadOpenApi();
  app.get('/openapi.json', (_req, res) => {
    const base = services.baseUrl();
    res.json({
      ...openapi,
      info: { ...(openapi['info'] as object), license: { name: 'Licence terms by plan tier', url: `${base}/license` } },
      servers: [{ url: base }],
    });
  });
  app.get('/healthz', async (_req, res) => {
    const head = await services.events.headPosition();
    res.json({ status: 'ok', time: services.clock.now().toISOString(), log_position: head });
  });

  registerPages(app, services);
  app.post('/mcp/http', mcpHandler(services));
  app.all('/mcp/http', mcpMethodNotAllowed(services));
  RegisterRoutes(app);

  app.use((req, res) => {
    sendProblem(res, problemOf('not_found', `no route for ${req.method} ${req.path}`, services.baseUrl()));
  });
  app.use(
    problemHandler(
      () => services.baseUrl(),
      services.log,
      async (req) => {
        const user = (req as AuthedRequest).user;
        return user ? remainingFor(services, user) : null;
      },
    ),
  );
  return app;
}
