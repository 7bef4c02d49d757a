import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  McpError,
  type CallToolRequest,
  type CallToolResult,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type JSONRPCResponse,
} from '@modelcontextprotocol/sdk/types.js';
import { INVALID_PARAMS, jsonRpcError, type JsonRpcError } from './json-rpc.js';
import { callTwin, type ToolContext } from './rest-twin.js';
import { createMcpServer, toolEntries, type ToolEntry } from './server.js';

/** The answer to a `tools/call` the SDK's schema refuses (no name, say): what is wrong, without the validator's dump. */
const NOT_A_TOOL_CALL = 'Invalid params: tools/call takes params.name, the name of a tool (a string), and params.arguments, an object of its arguments';

/**
 * One MCP server for the whole process, and the transport through which every HTTP request's
 * messages reach it.
 *
 * The SDK's stateless recipe builds a server, its tools and a streamable HTTP transport for every
 * POST: most of an MCP call's cost went there (docs/benchmarks.md). Here the server and its tools
 * are built once, and this transport hands each request to it under an id of its own: the
 * SDK's protocol layer keys a request's state by id, and clients of different POSTs reuse the same
 * ids (every client's first call is `id: 1`). The answer goes back under the client's id.
 *
 * The server is the SDK's low-level one (./server.ts): its own handlers answer `initialize`, `ping`
 * and unknown methods; `tools/list` and `tools/call` are the tools' (each tool checks its arguments
 * against its REST twin's contract, ./contract.ts). A tool call finds its caller with
 * `contextOf(extra)`: the context of the request with that id. What is per request is the
 * ToolContext and one promise. A `tools/call` the SDK's request schema refuses (no tool name, say)
 * is answered here with invalid params (-32602) and a sentence, not the validator's dump.
 *
 * One kind of request skips the SDK's protocol layer: a plain `tools/call` (see callDirectly), the
 * hot path. That layer classifies each incoming message by trying it against the two response
 * schemas first, and each failed zod parse builds an error with its stack: some 70 µs of CPU a call
 * together on the bench machine, most of what MCP cost beyond REST once the per-POST server was
 * gone.
 *
 * Nothing else of the client's reaches the shared server: notifications (`initialized`,
 * `cancelled`, progress) and responses are for a session, and a stateless server has none (a
 * `cancelled` naming a server-side id could otherwise reach another caller's request). Messages the
 * server would send besides answers (notifications, requests to the client) have no stream to go
 * to in JSON response mode: notifications are dropped, as the SDK's transport drops them in that
 * mode, and a request to the client fails at once.
 */
export class McpDispatcher implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private readonly server: Server;
  /** Each tool with its REST twin's contract (./contract.ts). */
  private readonly tools: ReadonlyMap<string, ToolEntry>;
  private readonly ready: Promise<void>;
  private lastId = 0;
  /** The requests the server is running, by the id it knows them by; `ctx` null for the server's own. */
  private readonly pending = new Map<number, { ctx: ToolContext | null; settle(answer: JSONRPCResponse): void }>();

  /** `spec`: the OpenAPI document tsoa generated, whose operations the tools mirror. */
  constructor(log: { error(obj: unknown, msg: string): void }, spec: Record<string, unknown>) {
    this.tools = toolEntries(spec);
    this.server = createMcpServer(this.tools, (params, extra) => this.callTool(params, this.contextOf(extra.requestId)));
    this.server.onerror = (err) => log.error({ err }, 'MCP server error');
    this.ready = this.server.connect(this);
    // Each request awaits `ready` and fails with it; this only keeps a failure from going unhandled.
    this.ready.catch((err: unknown) => log.error({ err }, 'MCP server failed to start'));
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if ('result' in message || 'error' in message) {
      const id = typeof message.id === 'number' ? message.id : NaN;
      const waiting = this.pending.get(id);
      if (!waiting) return;
      this.pending.delete(id);
      waiting.settle(message);
      return;
    }
    if ('id' in message) throw new Error('the MCP endpoint is stateless: the server cannot send requests to the client');
  }

  /** Runs one request; resolves with its answer under the client's id. */
  async run(request: JSONRPCRequest, ctx: ToolContext): Promise<JSONRPCResponse | JsonRpcError> {
    await this.ready;
    if (request.method === 'tools/call') {
      const refused = this.withUnknownArguments(request, ctx);
      if (refused) return refused;
      // Parsed once: the direct path runs on this parse.
      const parsed = CallToolRequestSchema.safeParse(request);
      if (!parsed.success) return jsonRpcError(request.id, INVALID_PARAMS, NOT_A_TOOL_CALL);
      const direct = this.callDirectly(request, parsed.data.params, ctx);
      if (direct) return direct;
    }
    const answer = await this.handle(request, ctx);
    return { ...answer, id: request.id };
  }

  /**
   * A `tools/call` run as the SDK's server runs it, without its protocol layer, when the request is
   * plain: a valid `tools/call` of one of the tools, with nothing but `name` and `arguments`. The
   * steps are the SDK's: the tool run (callTool, the SDK's handler too), the result checked and
   * parsed by `CallToolResultSchema` (the SDK sends the parsed result), the response `{result,
   * jsonrpc, id}`. Anything else (an unknown tool, `_meta`, `task`) is null: the SDK's server
   * answers it. test/e2e/mcp-jsonrpc.test.ts compares the two paths.
   */
  private callDirectly(request: JSONRPCRequest, params: CallToolRequest['params'], ctx: ToolContext): Promise<JSONRPCResponse> | null {
    const { name, arguments: args, ...more } = params;
    if (!this.tools.has(name) || Object.keys(more).length > 0) return null;
    return this.answered(request, this.callTool({ name, arguments: args }, ctx));
  }

  /**
   * A `tools/call` of a known tool whose arguments, as sent, name one it does not take: answered
   * as any unknown argument is (the tool's free `bad_request`, ./contract.ts). Checked before the
   * SDK's schema, which drops an argument named `__proto__` (the call then ran, and was charged, as
   * if it had not been sent) and refuses an object whose `constructor` is not a function.
   */
  private withUnknownArguments(request: JSONRPCRequest, ctx: ToolContext): Promise<JSONRPCResponse> | null {
    const { name, arguments: args } = (request.params ?? {}) as { name?: unknown; arguments?: unknown };
    const entry = typeof name === 'string' ? this.tools.get(name) : undefined;
    if (!entry || args === null || typeof args !== 'object' || Array.isArray(args)) return null;
    if (Object.keys(args).every((k) => entry.contract.args.includes(k))) return null;
    return this.answered(request, this.callTool({ name: name as string, arguments: args as Record<string, unknown> }, ctx));
  }

  /** The response to `request` carrying `result` as the SDK sends one (parsed by its schema). */
  private answered(request: JSONRPCRequest, result: Promise<CallToolResult>): Promise<JSONRPCResponse> {
    return result.then((r): JSONRPCResponse => {
      const checked = CallToolResultSchema.safeParse(r);
      if (checked.success) return { result: checked.data, jsonrpc: '2.0', id: request.id };
      const err = new McpError(ErrorCode.InvalidParams, `Invalid tools/call result: ${checked.error.message}`);
      return { jsonrpc: '2.0', id: request.id, error: { code: err.code, message: err.message } };
    });
  }

  /** A tool call, on either path: an unknown tool is the SDK's invalid params error; the rest is the tool's result (./rest-twin.ts). */
  private async callTool(params: CallToolRequest['params'], ctx: ToolContext): Promise<CallToolResult> {
    const entry = this.tools.get(params.name);
    if (!entry) throw new McpError(ErrorCode.InvalidParams, `Tool ${params.name} not found`);
    return callTwin(ctx, entry.tool, entry.contract, params.arguments);
  }

  private handle(request: JSONRPCRequest, ctx: ToolContext | null): Promise<JSONRPCResponse> {
    const id = ++this.lastId;
    return new Promise((settle) => {
      this.pending.set(id, { ctx, settle });
      this.onmessage?.({ ...request, id });
    });
  }

  private contextOf(id: unknown): ToolContext {
    const ctx = typeof id === 'number' ? this.pending.get(id)?.ctx : undefined;
    if (!ctx) throw new Error(`MCP tool call without a caller (id ${String(id)})`);
    return ctx;
  }
}
