import { JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** JSON-RPC 2.0's error codes this endpoint answers with itself (the SDK's server answers the others). */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;

/**
 * The most messages one batch may hold, for the clients that may still send batches (see
 * `batchesAllowed`): each request of a batch takes its own rate-limit token and runs after the one
 * before it, so ten keep one POST's work and answer small.
 */
export const MAX_BATCH = 10;

/** The first protocol version without JSON-RPC batching (MCP 2025-06-18 removed it). */
export const BATCHLESS_SINCE = '2025-06-18';

/**
 * Whether a POST may hold a batch: not for a client that speaks MCP 2025-06-18 or later (its
 * `MCP-Protocol-Version` header names one), nor for one naming a version this server does not
 * speak (a batch must not get through behind an initialize the version check lets pass); yes, of
 * at most MAX_BATCH messages, for one that speaks an earlier version (2025-03-26 had batches) or
 * sends no header (which that version's clients need not send). Dates compare as text.
 */
export function batchesAllowed(version: string | undefined): boolean {
  return version === undefined || (SUPPORTED_PROTOCOL_VERSIONS.includes(version) && version < BATCHLESS_SINCE);
}

export interface JsonRpcError {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: { code: number; message: string; data?: unknown };
}

export function jsonRpcError(id: RequestId | null, code: number, message: string, data?: unknown): JsonRpcError {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}

/** JSON-RPC 2.0's answer to a body that is not JSON (its id cannot be known). */
export const JSON_RPC_PARSE_ERROR = jsonRpcError(null, PARSE_ERROR, 'Parse error: the body is not valid JSON');

/**
 * One message of a body, as JSON-RPC 2.0 classifies it: a request, to be answered under its id; an
 * element that is no valid message, answered with Invalid Request; or a notification or a
 * response (the client answering a server request), which get no answer.
 */
export type Message = { kind: 'request'; request: JSONRPCRequest } | { kind: 'invalid'; answer: JsonRpcError } | { kind: 'unanswered' };

/**
 * A parsed body: one message, or a batch (an array of 1 to MAX_BATCH messages), each classified
 * on its own; or `refused` with the one error object that answers the body as a whole (an empty
 * or oversized batch, or any batch from a client whose protocol has none: see batchesAllowed).
 */
export type Body = { kind: 'messages'; batch: boolean; messages: Message[] } | { kind: 'refused'; answer: JsonRpcError };

export function readBody(body: unknown, version?: string): Body {
  if (!Array.isArray(body)) return { kind: 'messages', batch: false, messages: [classify(body)] };
  if (!batchesAllowed(version)) {
    const why = SUPPORTED_PROTOCOL_VERSIONS.includes(version!)
      ? `MCP ${BATCHLESS_SINCE} and later have no JSON-RPC batches (this request names ${version}): send one message per POST`
      : `MCP-Protocol-Version ${version} is not supported (${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}), and its POSTs have no JSON-RPC batches: send one message per POST`;
    return { kind: 'refused', answer: jsonRpcError(null, INVALID_REQUEST, `Invalid Request: ${why}`) };
  }
  if (body.length === 0) return { kind: 'refused', answer: jsonRpcError(null, INVALID_REQUEST, 'Invalid Request: the batch is empty') };
  if (body.length > MAX_BATCH) {
    return { kind: 'refused', answer: jsonRpcError(null, INVALID_REQUEST, `Invalid Request: Batch must not exceed ${MAX_BATCH} messages`) };
  }
  return { kind: 'messages', batch: true, messages: body.map(classify) };
}

/** Valid messages are those of the MCP schema (JSON-RPC 2.0 with MCP's narrowing: `params` an object, `id` a string or an integer). */
function classify(value: unknown): Message {
  const parsed = JSONRPCMessageSchema.safeParse(value);
  if (!parsed.success) {
    return { kind: 'invalid', answer: jsonRpcError(idOf(value), INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 request, notification or response') };
  }
  const message = parsed.data;
  if ('method' in message && 'id' in message) return { kind: 'request', request: message };
  return { kind: 'unanswered' };
}

/** The id of an invalid element, when it has one a response can carry; else null, as JSON-RPC says. */
function idOf(value: unknown): RequestId | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id)) ? id : null;
}
