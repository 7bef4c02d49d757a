import type { RequestHandler } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Services } from '../container.js';
import { authenticate, type AuthedRequest } from '../http/authentication.js';
import { problemOf, sendProblem } from '../http/problem.js';
import { createMcpServer } from './server.js';

/**
 * POST {base}/mcp/http: stateless streamable HTTP with JSON responses. The key is checked at the
 * HTTP level before any MCP message is read: a missing or unknown key is a 401 problem, a revoked
 * one a 403 (thrown to the app's problem handler, as for REST).
 */
export function mcpHandler(services: Services): RequestHandler {
  return async (req, res) => {
    const authed = req as AuthedRequest;
    const principal = await authenticate(services, req.header('x-api-key'), authed);
    const server = createMcpServer(services, principal, authed);
    // Stateless: a transport serves one request and cannot be reused.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };
}

/** GET (SSE stream) and DELETE (session end) have no meaning for a stateless server: 405. */
export function mcpMethodNotAllowed(services: Services): RequestHandler {
  return (req, res) => {
    res.setHeader('Allow', 'POST');
    sendProblem(res, {
      ...problemOf('bad_request', `${req.method} is not supported: the MCP endpoint is stateless, POST JSON-RPC messages to it`, services.baseUrl()),
      status: 405,
      title: 'Method not allowed',
    });
  };
}
