import type { Request, Response } from 'express';
import { rateKeyOf } from '../../domain/rate-card.js';
import type { AuthedRequest } from '../../web/meter.port.js';
import type { CallRoute, RequestRecorder } from '../metering/request-recorder.js';
import { PROBLEM_CODE_LOCAL } from './problem.js';

/** The MCP endpoint, whose tool calls the MCP route records one by one. */
export const MCP_PATH = '/mcp/http';

/** Set by the MCP route once it recorded a POST's tool calls: the POST itself is then not recorded again. */
export const TOOL_CALLS_RECORDED = 'tool_calls_recorded';

/** A status for a call whose client went away before any answer was written (nginx's word for it). */
const CLIENT_CLOSED = 499;

/**
 * Records every `/v1` call of a valid key in the request log when its response is done, answered
 * or refused (the key's tier, its credits or rate, a bad parameter, a missing ticker): a request
 * without a valid key belongs to no account and is not recorded. An MCP POST is recorded here only
 * when it was refused as a whole (over its rate, a wrong media type, malformed JSON) and no tool
 * call of it was recorded. The record is pushed onto the log's buffer: the call never waits for it.
 * Run by the request metrics' own listener at the response's end (observeRequests); none when
 * the log is off.
 */
export function recordRequests(recorder: RequestRecorder): ((req: Request, res: Response, started: number, route: string) => void)[] {
  if (!recorder.enabled) return [];
  const routes = new Map<string, CallRoute>();
  return [
    (req, res, started, template) => {
      const user = (req as AuthedRequest).user;
      if (!user || !(req.originalUrl.startsWith('/v1/') || req.originalUrl.startsWith(MCP_PATH))) return;
      const route = routeFields(req.method, template, routes);
      if (route.channel === 'mcp' && (res.locals[TOOL_CALLS_RECORDED] === true || res.statusCode < 400)) return;
      if (!res.headersSent) return recorder.record(user, route, CLIENT_CLOSED, null, started);
      // A refusal that is no problem (MCP's JSON-RPC errors over HTTP) has its status alone.
      recorder.record(user, route, res.statusCode, (res.locals[PROBLEM_CODE_LOCAL] as string | undefined) ?? null, started);
    },
  ];
}

/** The route's fields, worked out once per method and route (`template`: the metrics' route pattern). */
function routeFields(method: string, template: string, cache: Map<string, CallRoute>): CallRoute {
  const id = `${method} ${template}`;
  let fields = cache.get(id);
  if (!fields) {
    // Express's `/v1/scores/:ticker` is the document's `/v1/scores/{ticker}`; HEAD runs the GET route.
    const path = template.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const mcp = path === MCP_PATH;
    fields = { channel: mcp ? 'mcp' : 'rest', operation: mcp ? null : (rateKeyOf(method === 'HEAD' ? 'GET' : method, path) ?? null), tool: null, method, path };
    if (cache.size < 1000) cache.set(id, fields);
  }
  return fields;
}
