import type { Services } from '../container.js';
import type { RouteMount } from '../http/app.js';
import { mcpMethodNotAllowed, mcpRoute } from './http.js';

/** The hosted MCP endpoint, mounted on the app by the composition (server.ts): POST /mcp/http, other methods 405. */
export function mcpRoutes(services: Services): RouteMount {
  return (app, openapi) => {
    // A body is read here and by the webhook commands (JSON, 16 KiB: commands/manage-webhooks/webhooks.controller.ts).
    app.post('/mcp/http', ...mcpRoute(services, openapi));
    app.all('/mcp/http', mcpMethodNotAllowed(services));
  };
}
