import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError } from '../../core/errors.js';
import type { Principal } from '../../core/meter.port.js';
import { RATE_CARD, describeCost, requireTier, type RateKey } from '../../domain/rate-card.js';
import { problemOf, type ProblemDetails } from '../../core/problem.js';
import { MeteredCall, type QueryContext } from '../../../queries/shared/query-context.js';

/** What a tool call of one MCP request works with: the read side of the app and the authenticated caller. */
export interface ToolContext {
  queries: QueryContext;
  /** Its `request_id` is the MCP request's, on the ledger entry of each charge. */
  principal: Principal;
  log: { error(obj: unknown, msg: string): void };
  /**
   * Sets `X-Credits-Remaining` on the HTTP response that carries the tool's result. That response
   * is written only once every request of its POST has its answer (src/app/mcp/http.ts), so the
   * header carries the balance after the call, the value the result's `_meta.credits_remaining`
   * gives as a number (see creditsNumber).
   */
  creditsRemaining(value: string): void;
}

/**
 * The context of the request a tool call belongs to. The tools are registered once per process on
 * one server that serves every request (src/app/mcp/server.ts); what differs per request (the
 * caller, the HTTP response) is looked up by the SDK's `extra` of the call.
 */
export type ContextOf = (extra: RequestHandlerExtra<ServerRequest, ServerNotification>) => ToolContext;

/**
 * A tool, defined once per process: what `tools/list` shows of it (its zod input shape becomes the
 * listed JSON Schema) and what a call runs, given the arguments as the input shape parses them and
 * the caller. No `inputSchema`: the tool takes no arguments (the SDK lists an empty object and
 * validates nothing).
 */
export interface TwinTool {
  name: string;
  title: string;
  description: string;
  inputSchema?: z.ZodRawShape;
  annotations: ToolAnnotations;
  run: (args: Record<string, unknown>, ctx: ToolContext) => Promise<CallToolResult>;
}

/** A TwinTool whose `run` receives its arguments typed by its input shape. */
export function twinTool<S extends z.ZodRawShape = Record<never, never>>(
  tool: Omit<TwinTool, 'inputSchema' | 'run'> & { inputSchema?: S; run: (args: z.infer<z.ZodObject<S>>, ctx: ToolContext) => Promise<CallToolResult> },
): TwinTool {
  // `run` receives what `inputSchema` parses, which the SDK and the dispatcher both ensure.
  return tool as TwinTool;
}

/** The tool name the rate card gives an endpoint: names are defined once, next to the costs. */
export function toolNameOf(key: RateKey): string {
  const name = RATE_CARD[key].mcp_tool;
  if (!name) throw new Error(`rate card entry ${key} has no MCP tool`);
  return name;
}

/**
 * Tool description: the REST summary plus the cost and minimum plan read from the rate card. The
 * twin is the key's first GET route: tools only read (`webhooks` lists its POST first).
 */
export function describeTool(key: RateKey, text: string): string {
  const { min_tier, routes } = RATE_CARD[key];
  const twin = routes.find((r) => r.method === 'GET');
  if (!twin) throw new Error(`rate card entry ${key} has no GET route for a tool to mirror`);
  const plan = min_tier === 'free' ? '' : ` Needs the ${min_tier} plan or higher.`;
  return `${text} Costs ${describeCost(key)} (same as its REST twin ${twin.method} ${twin.path}).${plan}`;
}

/**
 * `_meta.credits_remaining`: the `X-Credits-Remaining` value as a JSON number (negative in
 * overage), or null where the header says `unlimited` (an unmetered enterprise account), as
 * `/v1/usage` shows `credits_remaining` null there. The header keeps its text.
 */
function creditsNumber(header: string): number | null {
  const n = Number(header);
  return Number.isFinite(n) ? n : null;
}

/**
 * A tool argument as REST receives it: the text a client would put in the URL for it. A string is
 * itself, a number or boolean as written (1.5 → "1.5"), null → "null" (as `?direction=null`), an
 * array or object its JSON; absent stays absent.
 */
export function asQuery(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * A tool argument judged by its REST twin. tools/list shows `listed` (the JSON type the twin
 * expects and its description), but any JSON value gets past the SDK's input check and reaches the
 * twin in query-string form (see asQuery). So an argument of the wrong type (`{"limit":
 * "abc"}`, `{"limit": 1.5}`) is refused by the same parser as the equivalent query (`?limit=abc`):
 * a tool error with REST's 400 problem and the credits left, not the SDK's bare -32602 text.
 */
export function restArg(listed: z.ZodTypeAny): z.ZodType<string | undefined, z.ZodTypeDef, unknown> {
  // `catch` hands a value `listed` rejects on unchanged; JSON Schema generation sees through
  // catch and transform to `listed`.
  const anyValue: z.ZodType<unknown, z.ZodTypeDef, unknown> = listed.catch((ctx: { input: unknown }) => ctx.input);
  return anyValue.transform(asQuery);
}

/** A required argument judged by its REST twin (see restArg): listed as required; only leaving it out is refused by the SDK. */
export function requiredRestArg(listed: z.ZodTypeAny): z.ZodType<string, z.ZodTypeDef, unknown> {
  return restArg(listed).refine((v): v is string => v !== undefined, { message: 'Required' });
}

/**
 * Runs a tool as its REST twin: the twin's `run` (the controller's body), so both faces share the
 * query, the validation, the tier gate and the metering by construction; the charge is recorded
 * with channel `mcp`. The REST body becomes the result (structured and as JSON text); an AppError
 * becomes an `isError` result carrying the same problem details REST would send.
 */
export async function callTwin<T extends object>(ctx: ToolContext, key: RateKey, run: (call: MeteredCall) => Promise<T>): Promise<CallToolResult> {
  const call = new MeteredCall(ctx.queries, ctx.principal, 'mcp');
  try {
    requireTier(ctx.principal.tier, key);
    const body = await run(call);
    const remaining = call.remaining;
    if (remaining !== null) ctx.creditsRemaining(remaining);
    return {
      content: [{ type: 'text', text: JSON.stringify(body) }],
      structuredContent: body as Record<string, unknown>,
      ...(remaining !== null ? { _meta: { credits_remaining: creditsNumber(remaining) } } : {}),
    };
  } catch (err) {
    return errorResult(ctx, err);
  }
}

async function errorResult(ctx: ToolContext, err: unknown): Promise<CallToolResult> {
  const base = ctx.queries.baseUrl();
  let problem: ProblemDetails;
  if (err instanceof AppError) {
    problem = problemOf(err.code, err.detail, base, err.extensions);
  } else {
    ctx.log.error({ err }, 'MCP tool failed');
    problem = problemOf('internal', 'the service failed to answer; the error was logged', base);
  }
  const remaining = await ctx.queries.meter.remaining(ctx.principal).catch(() => null);
  if (remaining !== null) ctx.creditsRemaining(remaining);
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(problem) }],
    structuredContent: problem,
    ...(remaining !== null ? { _meta: { credits_remaining: creditsNumber(remaining) } } : {}),
  };
}
