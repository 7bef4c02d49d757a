import express, { type Request, type RequestHandler } from 'express';
import { isInitializeRequest, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCRequest, type JSONRPCResponse } from '@modelcontextprotocol/sdk/types.js';
import type { Services } from '../container.js';
import { requestIdOf, setRateHeaders } from '../http/authentication.js';
import { clientAddressWhenAsked } from '../http/client-address.js';
import { admit, CREDITS_HEADER, type AuthedRequest, type Principal } from '../../web/meter.port.js';
import { AppError } from '../../core/errors.js';
import { problemOf } from '../../web/problem.js';
import { API_KEY_HEADER, newRequestId } from '../../web/response-headers.js';
import { sendProblem } from '../http/problem.js';
import { McpDispatcher } from './dispatcher.js';
import { INVALID_PARAMS, INVALID_REQUEST, JSON_RPC_PARSE_ERROR, jsonRpcError, readBody, type JsonRpcError, type Message } from './json-rpc.js';
import { errorResult, type ToolContext } from './rest-twin.js';
import { TOOL_CALLS_RECORDED } from '../http/request-recording.js';
import { callerOf, recordToolCall } from './tool-call-records.js';

/**
 * POST {base}/mcp/http: stateless streamable HTTP with JSON responses, in this order.
 *
 * 1. The key is checked before anything else: a missing or unknown key is a 401 problem, a revoked
 *    one a 403 (thrown to the app's problem handler, as for REST).
 * 2. The headers, before the body is read. The Accept header must list application/json and
 *    text/event-stream, as the MCP transport requires (406 with a JSON-RPC error body, id null, as
 *    the SDK's transport answers it). The body's media type must be `application/json`, with no
 *    charset or UTF-8: anything else (another media type, none, another charset) is a 415
 *    `unsupported_media_type` problem.
 * 3. The body is read as JSON (at most 64 KiB): too large is a 413 problem, an unknown content
 *    encoding a 415 problem; a body that is not JSON is JSON-RPC's parse error (-32700, HTTP 400).
 * 4. JSON-RPC 2.0 (src/app/mcp/json-rpc.ts): one message, or for a client of a protocol before
 *    2025-06-18 a batch of 1 to 10, each element on its own. A request is answered under its id;
 *    an element that is no valid message gets an Invalid Request error (-32600, its id if it has a
 *    usable one, else null); a notification or a response gets nothing. A batch is answered with
 *    an array; a body with nothing to answer is a 202 without a body. An empty or oversized batch,
 *    any batch from a 2025-06-18+ client, or a single invalid message, is answered with one -32600
 *    error and HTTP 400. An unsupported `MCP-Protocol-Version` header is a 400 with a JSON-RPC
 *    error (-32000), as in the SDK.
 * 5. Each request pays its own way (see `callersOf`): the first rides on the POST's rate-limit
 *    token and request id, every other takes a token of its own from the same bucket, under a
 *    request id of its own (the ledger's `request_id` of its charge). A request over the rate is
 *    refused without running: a tool call with a `rate_limited` tool error, anything else with a
 *    JSON-RPC error carrying the same problem details.
 * 6. The requests run on the process's one MCP server (src/app/mcp/dispatcher.ts), one after the
 *    other, each answer kept as its JSON text; once a batch's answers hold MAX_ANSWER_BYTES, its
 *    later requests are refused unrun (`limit_exceeded`). A POST so holds at most that plus one
 *    answer, the most one REST call can hold.
 *
 * Every response to an authenticated key carries `X-Credits-Remaining`, as on REST: set in step 1
 * from the account's balance (so protocol errors carry it too), then replaced by each tool call
 * with the balance after it (after its charge, or as it stands after a refusal). The response is
 * written once every request of the POST has its answer, so the tools' value is the one sent.
 */
export function mcpRoute(services: Services, spec: Record<string, unknown>): RequestHandler[] {
  const dispatcher = new McpDispatcher(services.log, spec);
  return [mcpAuthentication(services), mediaTypes(services), jsonRpcBody(), mcpHandler(services, dispatcher)];
}

function mcpAuthentication(services: Services): RequestHandler {
  return async (req, res, next) => {
    try {
      const principal = await services.meter.authenticate(req.header(API_KEY_HEADER), requestIdOf(req, services.ids), clientAddressWhenAsked(req));
      (req as AuthedRequest).user = principal;
      const remaining = await services.meter.remaining(principal).catch(() => null);
      if (remaining !== null) res.setHeader(CREDITS_HEADER, remaining);
      // The key's one bucket for REST and MCP alike: a refused request is 429 before any tool runs.
      setRateHeaders(res, principal);
      admit(principal);
      next();
    } catch (err) {
      if (err instanceof AppError && err.code === 'rate_limited' && !res.hasHeader('Retry-After')) res.setHeader('Retry-After', String(Number(err.extensions['retry_after_seconds'] ?? 1)));
      next(err);
    }
  };
}

/** The SDK transport's answer to a client that does not accept both of the transport's response types. */
const NOT_ACCEPTABLE = jsonRpcError(null, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');

function mediaTypes(services: Services): RequestHandler {
  return (req, res, next) => {
    const accept = req.header('accept') ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
      res.status(406).json(NOT_ACCEPTABLE);
      return;
    }
    if (!isUtf8Json(req.header('content-type'))) {
      const sent = req.header('content-type');
      const detail = `the MCP endpoint reads only application/json in UTF-8 (got ${sent ? JSON.stringify(sent) : 'no Content-Type'})`;
      sendProblem(res, problemOf('unsupported_media_type', detail, services.baseUrl()));
      return;
    }
    next();
  };
}

/**
 * `application/json` with no charset parameter or `charset=utf-8` (any case, quoted or not). Other
 * parameters are ignored, as is a malformed parameter section (`application/json;`).
 */
function isUtf8Json(header: string | undefined): boolean {
  if (!header) return false;
  const [type, ...parameters] = header.split(';');
  if (type!.trim().toLowerCase() !== 'application/json') return false;
  for (const parameter of parameters) {
    const eq = parameter.indexOf('=');
    if (eq < 0 || parameter.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const charset = parameter.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    if (!/^utf-?8$/i.test(charset)) return false;
  }
  return true;
}

function jsonRpcBody(): RequestHandler {
  // The media type is checked above. Not strict: any JSON value is a body JSON-RPC answers (a
  // bare `1` is an Invalid Request, not a parse error). An empty body is no JSON (body-parser would
  // read it as {}).
  const empty = new WeakSet<object>();
  const parse = express.json({
    limit: '64kb',
    strict: false,
    type: () => true,
    verify: (req, _res, buf) => {
      if (buf.length === 0) empty.add(req);
    },
  });
  return (req, res, next) =>
    parse(req, res, (err?: unknown) => {
      // body-parser marks a body it read whole but could not parse; other failures stay HTTP's.
      if ((err as { type?: unknown } | undefined)?.type === 'entity.parse.failed' || (!err && (empty.has(req) || req.body === undefined))) {
        res.status(400).json(JSON_RPC_PARSE_ERROR);
        return;
      }
      next(err);
    });
}

function mcpHandler(services: Services, dispatcher: McpDispatcher): RequestHandler {
  return async (req, res) => {
    const principal = (req as AuthedRequest).user;
    if (!principal) throw new Error('MCP handler reached without authentication');
    const sent = req.header('mcp-protocol-version');
    const body = readBody(req.body, sent);
    if (body.kind === 'refused') {
      res.status(400).json(body.answer);
      return;
    }
    const version = unsupportedVersion(req, body.messages);
    if (version) {
      res.status(400).json(version);
      return;
    }
    const ctx: ToolContext = {
      queries: services.queries,
      principal,
      log: services.log,
      creditsRemaining: (value) => {
        if (!res.headersSent) res.setHeader(CREDITS_HEADER, value);
      },
      freeAnswers: services.freeAnswers,
    };
    const callers = await callersOf(body.messages, principal, req, services);
    const last = callers.findLast((c) => c !== null && !(c instanceof AppError));
    if (last && last !== principal) setRateHeaders(res, last as Principal);
    // Each tool call in the request log, as its own call (the POST is then not recorded again).
    const record: Answered = (i, one, started) => {
      const m = body.messages[i]!;
      if (m.kind === 'request' && recordToolCall(services.recorder, callerOf(callers[i] ?? null, principal, services.ids), m.request, one, started)) res.locals[TOOL_CALLS_RECORDED] = true;
    };
    const answers = (await answer(body.messages, callers, dispatcher, ctx, record)).filter((a) => a !== null);
    if (answers.length === 0) {
      res.status(202).end();
      return;
    }
    const text = body.batch ? `[${answers.join(',')}]` : answers[0]!;
    res.status(!body.batch && body.messages[0]!.kind === 'invalid' ? 400 : 200);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text, 'utf8');
  };
}

/**
 * Who each message's request runs as: the POST's principal for the first request (its token was
 * taken when the key was checked), a principal of its own for every other, authenticated again
 * under a new request id, which takes a token from the same bucket as any REST request of the key
 * (the meter keys the bucket). A request the rate refuses gets its refusal instead; a message that
 * is no request gets null. The tokens are taken before any request runs, as if each had come alone.
 */
async function callersOf(messages: Message[], principal: Principal, req: Request, services: Services): Promise<(Principal | AppError | null)[]> {
  const out: (Principal | AppError | null)[] = [];
  let first = true;
  for (const m of messages) {
    if (m.kind !== 'request') {
      out.push(null);
    } else if (first) {
      first = false;
      out.push(principal);
    } else {
      out.push(await ownCaller(req, services));
    }
  }
  return out;
}

async function ownCaller(req: Request, services: Services): Promise<Principal | AppError> {
  try {
    const own = await services.meter.authenticate(req.header(API_KEY_HEADER), newRequestId(services.ids), clientAddressWhenAsked(req));
    admit(own);
    return own;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
}

/** The SDK transport's check: a protocol version header it does not support, on anything but an initialize. */
function unsupportedVersion(req: Request, messages: Message[]): JsonRpcError | null {
  const version = req.header('mcp-protocol-version');
  if (version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return null;
  if (messages.some((m) => m.kind === 'request' && isInitializeRequest(m.request))) return null;
  return jsonRpcError(
    null,
    -32000,
    `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
  );
}

/**
 * The most bytes of answers one batch gathers before its later requests are refused unrun: well
 * above the largest free result (the track record, a megabyte or more with the full universe;
 * its text block is a summary, so it is sent about once); the account's budget of free answers'
 * bytes (src/app/metering/free-answer-bytes.ts) may refuse free results sooner.
 */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/** Told of each message's answer as it is made, with when the message began (`performance.now()`). */
type Answered = (index: number, answer: JSONRPCResponse | JsonRpcError | null, started: number) => void;

/**
 * Each message's answer as JSON text, in order (null: none). A batch holding a `tools/call` with
 * malformed arguments runs none of its requests (see malformedArguments); otherwise each request
 * runs as its caller (callersOf), one after the other, until the answers hold MAX_ANSWER_BYTES.
 */

async function answer(messages: Message[], callers: (Principal | AppError | null)[], dispatcher: McpDispatcher, ctx: ToolContext, answered: Answered): Promise<(string | null)[]> {
  const problems = messages.map((m) => (m.kind === 'request' ? malformedArguments(m.request) : null));
  const runNone = problems.some((p) => p !== null);
  const out: (string | null)[] = [];
  let held = 0;
  for (const [i, m] of messages.entries()) {
    const started = performance.now();
    const one = await answerOne(m, problems[i] ?? null, runNone, callers[i] ?? null, held, dispatcher, ctx);
    answered(i, one, started);
    const text = one === null ? null : JSON.stringify(one);
    held += text?.length ?? 0;
    out.push(text);
  }
  return out;
}

async function answerOne(
  m: Message,
  problem: string | null,
  runNone: boolean,
  caller: Principal | AppError | null,
  held: number,
  dispatcher: McpDispatcher,
  ctx: ToolContext,
): Promise<JSONRPCResponse | JsonRpcError | null> {
  switch (m.kind) {
    case 'invalid':
      return m.answer;
    case 'unanswered':
      return null;
    case 'request': {
      if (problem) return jsonRpcError(m.request.id, INVALID_PARAMS, problem);
      if (runNone) return jsonRpcError(m.request.id, INVALID_REQUEST, 'not run: another message of this batch is malformed');
      if (caller instanceof AppError) return refusal(m.request, caller, ctx);
      if (held >= MAX_ANSWER_BYTES) {
        const detail = `not run: this batch's answers already hold ${held} bytes, the most one POST gathers is ${MAX_ANSWER_BYTES}; send this request in a POST of its own`;
        return refusal(m.request, new AppError('limit_exceeded', detail, { maximum: MAX_ANSWER_BYTES }), ctx);
      }
      return dispatcher.run(m.request, caller ? { ...ctx, principal: caller } : ctx);
    }
  }
}

/** The JSON-RPC error code of a refusal that is no tool's result (the server-error range, as the SDK's transport errors). */
const REFUSED = -32000;

/** A request refused unrun: a tool call gets the tool error REST's problem would be, anything else a JSON-RPC error carrying that problem. */
async function refusal(request: JSONRPCRequest, err: AppError, ctx: ToolContext): Promise<JSONRPCResponse | JsonRpcError> {
  const result = await errorResult(ctx, err);
  if (request.method === 'tools/call') return { jsonrpc: '2.0', id: request.id, result };
  return jsonRpcError(request.id, REFUSED, `${err.code}: ${err.detail}`, result.structuredContent);
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
 * JSON-RPC "invalid params" (-32602) for a `tools/call` whose `arguments` is not an object or
 * nests deeper than any tool's arguments can: the SDK would answer the first with an "internal
 * error" carrying its validation dump, and the second with a stack overflow's text. Null when the
 * request may go to the SDK.
 */
function malformedArguments(request: JSONRPCRequest): string | null {
  if (request.method !== 'tools/call') return null;
  const args = (request.params as { arguments?: unknown } | undefined)?.arguments;
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) return 'params.arguments must be an object';
  if (depthOf(args, MAX_ARGUMENT_DEPTH + 1) > MAX_ARGUMENT_DEPTH) return `params.arguments nests deeper than ${MAX_ARGUMENT_DEPTH} levels`;
  return null;
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
