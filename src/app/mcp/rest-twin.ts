import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../../core/errors.js';
import type { Principal } from '../../web/meter.port.js';
import { RATE_CARD, describeCost, requireTier, type RateKey } from '../../domain/rate-card.js';
import { requireKeyMayCall } from '../../domain/accounts/key-limits.js';
import { problemOf, type ProblemDetails } from '../../web/problem.js';
import { MeteredCall, type QueryContext } from '../../../queries/shared/query-context.js';
import { budgetOf, DRY_RUN_ARGUMENT, DryRunPriced, MAX_CREDITS_ARGUMENT, NO_BUDGET, type CallBudget, type DryRunResult } from '../../web/call-budget.js';
import { queryOf, type ToolContract } from './contract.js';
import type { FreeAnswerBytes } from '../metering/free-answer-bytes.js';

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
  /** The accounts' budgets of free answers' bytes: a free tool's whole result counts, both copies. */
  freeAnswers: FreeAnswerBytes;
}

/**
 * A tool, defined once per process: the twin of a REST read, named by its rate-card key. What it
 * takes and answers is its twin's (./contract.ts reads both from the OpenAPI document); `run` is
 * the twin's body (the `run` its `*.query.ts` exports), given the arguments in query-string form (absent stays absent).
 * `nullable`: arguments that also take JSON null, meaning absent (`direction`, as the spec says).
 */
export interface TwinTool {
  name: string;
  key: RateKey;
  title: string;
  description: string;
  nullable?: readonly string[];
  annotations: ToolAnnotations;
  run: (args: Record<string, string | undefined>, call: MeteredCall) => Promise<object>;
  /**
   * The result's text block, when it is not the body's JSON (the default, as the MCP spec's
   * backwards-compatible copy of `structuredContent`): a compact reading of a large body, which
   * `structuredContent` still carries whole.
   */
  text?: (body: object, json: string) => string;
}

/** A TwinTool of a rate-card key: its name and the cost line of its description come from the rate card. */
export function twinTool(tool: Omit<TwinTool, 'name' | 'annotations'> & { annotations?: ToolAnnotations }): TwinTool {
  return {
    ...tool,
    name: toolNameOf(tool.key),
    description: describeTool(tool.key, tool.description),
    annotations: tool.annotations ?? { readOnlyHint: true, openWorldHint: false },
  };
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
  const bound = RATE_CARD[key].credits === 0 ? '' : RATE_CARD[key].unit === 'call' ? ' Pass max_credits to refuse it above a price, dry_run: true to price it without charging.' : ' Its price depends on the rows it returns: pass max_credits to cap it (a broad call is refused before its rows are read), dry_run: true to get the exact price without charging.';
  return `${text} Costs ${describeCost(key)} (same as its REST twin ${twin.method} ${twin.path}).${plan}${bound}`;
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
 * Runs a tool as its REST twin, in REST's order: the tier gate, the arguments (./contract.ts:
 * unknown or missing ones refused, the rest handed on as the query), then the twin's `run` (the
 * query's, which the controller calls too), so both faces share the query, the validation and the metering by
 * construction; the charge is recorded with channel `mcp`. The REST body becomes the result
 * (structured, and as JSON text or the tool's `text`); an AppError becomes an `isError` result
 * carrying the same problem details REST would send. A free tool's result is checked against and
 * counted in the account's byte budget as REST's answer is (src/app/metering/free-answer-bytes.ts),
 * nothing awaited between the check and the count.
 */
export async function callTwin(ctx: ToolContext, tool: TwinTool, contract: ToolContract, args: Record<string, unknown> | undefined): Promise<CallToolResult> {
  try {
    requireKeyMayCall(ctx.principal.limits, tool.key, 'GET');
    requireTier(ctx.principal.tier, tool.key);
    const { budget, rest } = budgetArguments(args);
    const call = new MeteredCall(ctx.queries, ctx.principal, 'mcp', budget, tool.key);
    let body: object;
    try {
      body = await tool.run(queryOf(tool.name, contract, rest), call);
    } catch (err) {
      if (err instanceof DryRunPriced) return dryRunResult(ctx, err);
      throw err;
    }
    const free = RATE_CARD[tool.key].credits === 0;
    if (free) ctx.freeAnswers.check(ctx.principal);
    const json = JSON.stringify(body);
    const text = tool.text ? tool.text(body, json) : json;
    if (free) {
      const bytes = Buffer.byteLength(json);
      ctx.freeAnswers.take(ctx.principal, bytes + (text === json ? bytes : Buffer.byteLength(text)));
    }
    const remaining = call.remaining;
    if (remaining !== null) ctx.creditsRemaining(remaining);
    // A key with credit limits: what it may still spend, beside the account's balance.
    const keyBudget = call.keyBudgetRemaining !== null ? { key_budget_remaining: call.keyBudgetRemaining } : {};
    return {
      content: [{ type: 'text', text }],
      structuredContent: body as Record<string, unknown>,
      ...(remaining !== null ? { _meta: { credits_remaining: creditsNumber(remaining), ...keyBudget } } : {}),
    };
  } catch (err) {
    return errorResult(ctx, err);
  }
}

/**
 * The arguments every tool takes besides its twin's parameters (REST's `X-Dry-Run` and
 * `X-Max-Credits` headers), taken out before the rest are read as the twin's query.
 */
function budgetArguments(args: Record<string, unknown> | undefined): { budget: CallBudget; rest: Record<string, unknown> | undefined } {
  if (!args || (!(DRY_RUN_ARGUMENT in args) && !(MAX_CREDITS_ARGUMENT in args))) return { budget: NO_BUDGET, rest: args };
  const { [DRY_RUN_ARGUMENT]: dryRun, [MAX_CREDITS_ARGUMENT]: maxCredits, ...rest } = args;
  // JSON null is absent, as for the twins' own arguments.
  const budget = budgetOf(dryRun ?? undefined, maxCredits ?? undefined, { dryRun: DRY_RUN_ARGUMENT, maxCredits: MAX_CREDITS_ARGUMENT });
  return { budget, rest };
}

/** A dry run's result: what the call would cost now, and the balance it did not touch. */
function dryRunResult(ctx: ToolContext, priced: DryRunPriced): CallToolResult {
  const body: DryRunResult = { dry_run: true, cost: priced.cost, credits_remaining: creditsNumber(priced.remaining) };
  ctx.creditsRemaining(priced.remaining);
  const keyBudget = priced.keyBudgetRemaining !== null ? { key_budget_remaining: priced.keyBudgetRemaining } : {};
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: { ...body }, _meta: { credits_remaining: body.credits_remaining, ...keyBudget } };
}

/** A tool error: the problem details REST would send for `err` (in structuredContent and as text), with the balance. */
export async function errorResult(ctx: ToolContext, err: unknown): Promise<CallToolResult> {
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
