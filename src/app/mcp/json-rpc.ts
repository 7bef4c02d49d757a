import { JSONRPCMessageSchema, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';

/** JSON-RPC 2.0's error codes this endpoint answers with itself (the SDK's server answers the others). */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;

/** The most messages one batch may hold (the SDK's streamable HTTP transport's limit, kept). */
export const MAX_BATCH = 100;

export interface JsonRpcError {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: { code: number; message: string };
}

export function jsonRpcError(id: RequestId | null, code: number, message: string): JsonRpcError {
  return { jsonrpc: '2.0', id, error: { code, message } };
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
 * or oversized batch).
 */
export type Body = { kind: 'messages'; batch: boolean; messages: Message[] } | { kind: 'refused'; answer: JsonRpcError };

export function readBody(body: unknown): Body {
  if (!Array.isArray(body)) return { kind: 'messages', batch: false, messages: [classify(body)] };
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
