import type { RequestHandler } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Services } from '../container.js';
import { authenticate, type AuthedRequest } from '../http/authentication.js';
import { CREDITS_HEADER, remainingFor } from '../http/metering.js';
import { problemOf, sendProblem } from '../http/problem.js';
import { createMcpServer } from './server.js';

/**
 * POST {base}/mcp/http: stateless streamable HTTP with JSON responses. The key is checked at the
 * HTTP level before any MCP message is read: a missing or unknown key is a 401 problem, a revoked
 * one a 403 (thrown to the app's problem handler, as for REST).
 *
 * Every response to an authenticated key carries `X-Credits-Remaining`, as on REST: set here from
 * the account's balance before the SDK handles the message (initialize, tools/list, protocol
 * errors), then replaced by each tool call with the balance after it (after its charge, or as it
 * stands after a refusal). In JSON response mode the SDK writes the response only once every
 * request of the POST has its result, so the tools' value is the one sent.
 */
export function mcpHandler(services: Services): RequestHandler {
  return async (req, res) => {
    const authed = req as AuthedRequest;
    const principal = await authenticate(services, req.header('x-api-key'), authed);
    const remaining = await remainingFor(services, principal).catch(() => null);
    if (remaining !== null) res.setHeader(CREDITS_HEADER, remaining);
    const creditsRemaining = (value: string) => {
      if (!res.headersSent) res.setHeader(CREDITS_HEADER, value);
    };
    const server = createMcpServer(services, principal, authed, creditsRemaining);
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
    sendProblem(
      res,
      problemOf('method_not_allowed', `${req.method} is not supported: the MCP endpoint is stateless, POST JSON-RPC messages to it`, services.baseUrl()),
    );
  };
}
