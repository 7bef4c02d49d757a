import express, { type RequestHandler } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Services } from '../container.js';
import { requestIdOf } from '../http/authentication.js';
import type { AuthedRequest } from '../../core/meter.port.js';
import { CREDITS_HEADER } from '../../core/meter.port.js';
import { problemOf } from '../../core/problem.js';
import { sendProblem } from '../http/problem.js';
import { createMcpServer } from './server.js';

/**
 * POST {base}/mcp/http: stateless streamable HTTP with JSON responses, three steps in this order.
 *
 * 1. The key is checked at the HTTP level before the body is read: a missing or unknown key is a
 *    401 problem, a revoked one a 403 (thrown to the app's problem handler, as for REST).
 * 2. The body is read as JSON (at most 64 KiB). HTTP-level failures (too large, an unknown
 *    encoding or charset) are problems; a body that is not JSON is JSON-RPC's parse error (-32700).
 * 3. The SDK handles the messages.
 *
 * Every response to an authenticated key carries `X-Credits-Remaining`, as on REST: set in step 1
 * from the account's balance (so protocol errors carry it too), then replaced by each tool call
 * with the balance after it (after its charge, or as it stands after a refusal). In JSON response
 * mode the SDK writes the response only once every request of the POST has its result, so the
 * tools' value is the one sent.
 */
export function mcpRoute(services: Services): RequestHandler[] {
  return [mcpAuthentication(services), jsonRpcBody(), mcpHandler(services)];
}

function mcpAuthentication(services: Services): RequestHandler {
  return async (req, res, next) => {
    try {
      const principal = await services.meter.authenticate(req.header('x-api-key'), requestIdOf(req, services.ids));
      (req as AuthedRequest).user = principal;
      const remaining = await services.meter.remaining(principal).catch(() => null);
      if (remaining !== null) res.setHeader(CREDITS_HEADER, remaining);
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** JSON-RPC 2.0's answer to a body that is not JSON (its id cannot be known). */
const JSON_RPC_PARSE_ERROR = { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON' } } as const;

function jsonRpcBody(): RequestHandler {
  const parse = express.json({ limit: '64kb' });
  return (req, res, next) =>
    parse(req, res, (err?: unknown) => {
      // body-parser marks a body it read whole but could not parse; other failures stay HTTP's.
      if ((err as { type?: unknown } | undefined)?.type === 'entity.parse.failed') {
        res.status(400).json(JSON_RPC_PARSE_ERROR);
        return;
      }
      next(err);
    });
}

function mcpHandler(services: Services): RequestHandler {
  return async (req, res) => {
    const principal = (req as AuthedRequest).user;
    if (!principal) throw new Error('MCP handler reached without authentication');
    const creditsRemaining = (value: string) => {
      if (!res.headersSent) res.setHeader(CREDITS_HEADER, value);
    };
    const refused = malformedToolCalls(req.body);
    if (refused) {
      res.status(200).json(refused);
      return;
    }
    const server = createMcpServer({ queries: services.queries, principal, log: services.log, creditsRemaining });
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

/** How deep tool arguments may nest: the tools take flat values; deeper input only costs stack. */
const MAX_ARGUMENT_DEPTH = 8;

const depthOf = (value: unknown, limit: number): number => {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const v of Object.values(value)) deepest = Math.max(deepest, depthOf(v, limit - 1));
  return deepest + 1;
};

/**
 * JSON-RPC "invalid params" (-32602) answers for `tools/call` messages whose `arguments` is not an
 * object or nests deeper than any tool's arguments can: the SDK would answer the first with an
 * "internal error" carrying its validation dump, and the second with a stack overflow's text.
 * Null when every message may go to the SDK.
 */
function malformedToolCalls(body: unknown): unknown {
  const messages = (Array.isArray(body) ? body : [body]) as ({ method?: unknown; id?: unknown; params?: { arguments?: unknown } } | null)[];
  const problems = messages.map((m) => {
    if (m === null || typeof m !== 'object' || m.method !== 'tools/call') return null;
    const args = m.params?.arguments;
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) return 'params.arguments must be an object';
    if (depthOf(args, MAX_ARGUMENT_DEPTH + 1) > MAX_ARGUMENT_DEPTH) return `params.arguments nests deeper than ${MAX_ARGUMENT_DEPTH} levels`;
    return null;
  });
  if (problems.every((p) => p === null)) return null;
  // A batch with a malformed call runs none of its messages; each request gets its answer.
  const answers = messages.flatMap((m, i) => {
    const id = m !== null && typeof m === 'object' && m.id !== undefined ? m.id : null;
    if (problems[i]) return [{ jsonrpc: '2.0', id, error: { code: -32602, message: problems[i] } }];
    if (id === null) return [];
    return [{ jsonrpc: '2.0', id, error: { code: -32600, message: 'not run: another message of this batch is malformed' } }];
  });
  return Array.isArray(body) ? answers : answers[0];
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
