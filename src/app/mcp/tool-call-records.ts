import type { CallToolResult, JSONRPCRequest, JSONRPCResponse } from '@modelcontextprotocol/sdk/types.js';
import type { Ids } from '../../core/ids.port.js';
import type { AppError } from '../../core/errors.js';
import { newRequestId } from '../../web/response-headers.js';
import type { Principal } from '../../web/meter.port.js';
import { MCP_PATH } from '../http/request-recording.js';
import { toolKeyOf, type CallOutcome, type RequestRecorder } from '../metering/request-recorder.js';
import type { JsonRpcError } from './json-rpc.js';

/**
 * The request log's record of one `tools/call` of an MCP POST (src/app/mcp/http.ts), as its REST
 * twin's would read: the tool's rate-card key, and the status and code of the problem a refusal
 * carries (a JSON-RPC error, such as arguments the tool does not take, is a 400 without a code).
 * A name no tool has is recorded without it: the log keeps only names the service defines.
 * Returns whether the request was a tool call (and so recorded).
 */
export function recordToolCall(recorder: RequestRecorder, caller: Principal, request: JSONRPCRequest, answer: JSONRPCResponse | JsonRpcError | null, started: number): boolean {
  if (request.method !== 'tools/call' || answer === null) return false;
  const name = (request.params as { name?: unknown } | undefined)?.name;
  const key = typeof name === 'string' ? toolKeyOf(name) : undefined;
  const { status, code } = outcomeOf(answer);
  recorder.record(caller, { channel: 'mcp', operation: key ?? null, tool: key ? (name as string) : null, method: 'POST', path: MCP_PATH }, status, code, started);
  return true;
}

function outcomeOf(answer: JSONRPCResponse | JsonRpcError): Pick<CallOutcome, 'status' | 'code'> {
  if ('error' in answer) return { status: 400, code: null };
  const result = answer.result as CallToolResult;
  if (!result.isError) return { status: 200, code: null };
  const problem = (result.structuredContent ?? {}) as { status?: unknown; code?: unknown };
  return { status: typeof problem.status === 'number' ? problem.status : 500, code: typeof problem.code === 'string' ? problem.code : null };
}

/**
 * Who a request of a batch ran as: its own principal, or for one refused unrun over the rate (no
 * principal of its own), the POST's key under a request id of its own.
 */
export function callerOf(caller: Principal | AppError | null, post: Principal, ids: Ids): Principal {
  if (caller === null) return post;
  return 'account_id' in caller ? caller : { ...post, request_id: newRequestId(ids) };
}
