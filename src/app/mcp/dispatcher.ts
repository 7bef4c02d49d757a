import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type JSONRPCResponse,
  type ListToolsResult,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ToolContext, TwinTool } from './rest-twin.js';
import { createMcpServer, TOOLS } from './server.js';

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
 * The server runs the requests exactly as the per-POST servers did: the SDK's own handlers
 * (`initialize`, `ping`, `tools/list`, `tools/call` with its input validation, unknown methods),
 * and the same tools. A tool finds its caller with `contextOf(extra)`: the context of the request
 * with that id. What is per request is the ToolContext and one promise.
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

  private readonly server: McpServer;
  /** Each tool's input shape as the SDK parses it (a zod object of the shape; null without arguments). */
  private readonly tools = new Map<string, { input: z.ZodObject<z.ZodRawShape> | null; run: TwinTool['run'] }>(
    TOOLS.map((t) => [t.name, { input: t.inputSchema ? z.object(t.inputSchema) : null, run: t.run }]),
  );
  private readonly ready: Promise<void>;
  private lastId = 0;
  /** The requests the server is running, by the id it knows them by; `ctx` null for the server's own. */
  private readonly pending = new Map<number, { ctx: ToolContext | null; settle(answer: JSONRPCResponse): void }>();

  constructor(log: { error(obj: unknown, msg: string): void }) {
    this.server = createMcpServer((extra) => this.contextOf(extra.requestId));
    this.server.server.onerror = (err) => log.error({ err }, 'MCP server error');
    this.ready = this.server.connect(this).then(() => this.listToolsOnce());
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
  async run(request: JSONRPCRequest, ctx: ToolContext): Promise<JSONRPCResponse> {
    await this.ready;
    const direct = this.callDirectly(request, ctx);
    if (direct) return direct;
    const answer = await this.handle(request, ctx);
    return { ...answer, id: request.id };
  }

  /**
   * A `tools/call` run as the SDK's server runs it, without its protocol layer, when the request is
   * plain: a valid `tools/call` of one of the tools, with nothing but `name` and `arguments`, and
   * arguments its input shape accepts. The steps are the SDK's (Server's and McpServer's tools/call
   * handlers): the arguments parsed by the tool's input shape, the tool run, an exception turned
   * into a tool error, the result checked and parsed by `CallToolResultSchema` (the SDK sends the
   * parsed result), the response `{result, jsonrpc, id}`. Anything else (an unknown tool,
   * arguments the shape refuses, `_meta`, `task`) is null: the SDK's server answers it.
   * test/e2e/mcp-jsonrpc.test.ts compares the two paths.
   */
  private callDirectly(request: JSONRPCRequest, ctx: ToolContext): Promise<JSONRPCResponse> | null {
    if (request.method !== 'tools/call') return null;
    const parsed = CallToolRequestSchema.safeParse(request);
    if (!parsed.success) return null;
    const { name, arguments: args, ...more } = parsed.data.params;
    const tool = this.tools.get(name);
    if (!tool || Object.keys(more).length > 0) return null;
    let input: Record<string, unknown> = {};
    if (tool.input) {
      const checked = tool.input.safeParse(args ?? {});
      if (!checked.success) return null;
      input = checked.data;
    }
    const toolError = (err: unknown): CallToolResult => ({
      content: [{ type: 'text', text: err instanceof Error ? err.message : String(err) }],
      isError: true,
    });
    return tool.run(input, ctx).then(
      (result): JSONRPCResponse => {
        const checked = CallToolResultSchema.safeParse(result);
        if (checked.success) return { result: checked.data, jsonrpc: '2.0', id: request.id };
        const err = new McpError(ErrorCode.InvalidParams, `Invalid tools/call result: ${checked.error.message}`);
        return { jsonrpc: '2.0', id: request.id, error: { code: err.code, message: err.message } };
      },
      (err: unknown) => ({ result: CallToolResultSchema.parse(toolError(err)), jsonrpc: '2.0', id: request.id }),
    );
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

  /**
   * `tools/list` from the list the SDK builds once: it converts each tool's zod schema to JSON
   * Schema on every call otherwise. The tools never change while the process runs. The SDK still
   * validates each `tools/list` request before this handler answers it.
   */
  private async listToolsOnce(): Promise<void> {
    const first = await this.handle({ jsonrpc: '2.0', id: 0, method: 'tools/list' }, null);
    if (!('result' in first)) throw new Error(`tools/list failed: ${JSON.stringify(first)}`);
    const tools = first.result as ListToolsResult;
    this.server.server.setRequestHandler(ListToolsRequestSchema, () => tools);
  }
}
