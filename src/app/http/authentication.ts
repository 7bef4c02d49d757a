import type { Request, Response } from 'express';
import { AppError, badRequest } from '../../core/errors.js';
import type { Ids } from '../../core/ids.port.js';
import { API_KEY_HEADER, HEADER, newRequestId } from '../../web/response-headers.js';
import { admit, type Principal } from '../../web/meter.port.js';
import { rateLimitHeaders } from '../metering/token-buckets.js';
import { RATE_CARD, isRateKey, requireTier } from '../../domain/rate-card.js';
import { budgetOf, DRY_RUN_HEADER, MAX_CREDITS_HEADER, type CallBudget } from '../../web/call-budget.js';
import { requireKeyMayCall } from '../../domain/accounts/key-limits.js';
import type { AuthedRequest } from '../../web/meter.port.js';
import { clientAddressWhenAsked } from './client-address.js';
import { httpContextOf } from './http-context.js';
import { meterFreeAnswer } from './fair-use.js';

/** The request's id (`req_` and 96 random bits), made on first use: its response and its ledger entry name it. */
export function requestIdOf(req: AuthedRequest, ids: Ids): string {
  return (req.requestId ??= newRequestId(ids));
}

/**
 * tsoa's security hook for `@Security('api_key', [rateKey])`: 401 for a missing or unknown key,
 * 403 `key_forbidden` for a revoked key (or a rotated one past its grace period), 403
 * `key_expired` for one past its expiry, 403 `key_scope_forbidden` for a call the key is
 * restricted from, 403 `tier` when the plan is below the endpoint's minimum tier in the rate card. Runs before parameter
 * validation, so the check order is key, tier, parameters.
 */
export async function expressAuthentication(request: Request, securityName: string, scopes?: string[]): Promise<Principal> {
  if (securityName !== 'api_key') throw new AppError('internal', `unknown security scheme ${securityName}`);
  const ctx = httpContextOf(request);
  const req = request as AuthedRequest;
  let principal: Principal;
  try {
    principal = await ctx.meter.authenticate(request.header(API_KEY_HEADER), requestIdOf(req, ctx.ids), clientAddressWhenAsked(request));
  } catch (err) {
    if (err instanceof AppError && err.code === 'rate_limited') request.res?.setHeader(HEADER.retryAfter, String(Number(err.extensions['retry_after_seconds'] ?? 1)));
    throw err;
  }
  // Set before the checks below, so that their refusals carry the caller's X-Credits-Remaining.
  req.user = principal;
  setRateHeaders(request.res, principal);
  // First of the checks, before any read-model work: a refused request costs nothing.
  admit(principal);
  const endpoint = scopes?.[0];
  if (endpoint !== undefined && !isRateKey(endpoint)) throw new AppError('internal', `security scope ${endpoint} is not a rate-card key`);
  // What the key may call (read-only, a list of operations): a property of the key, before the plan's.
  requireKeyMayCall(principal.limits, endpoint, request.method);
  if (endpoint) {
    requireTier(principal.tier, endpoint);
    req.budget = callBudgetOf(request);
    req.rateKey = endpoint;
    // A free read's answer is checked against and counted in the account's byte budget when sent.
    if (RATE_CARD[endpoint].credits === 0 && request.method === 'GET' && request.res) meterFreeAnswer(request.res, ctx.freeAnswers, principal);
  }
  rejectUnknownQuery(request, ctx.queryParams);
  return principal;
}

/**
 * The request's dry run and maximum (`X-Dry-Run`, `X-Max-Credits`), held to by the call as it runs
 * (MeteredCall). Only reads take a dry run: the writes (webhooks) are free, and one must never run
 * when its caller asked only for its price.
 */
function callBudgetOf(request: Request): CallBudget {
  const budget = budgetOf(request.header(DRY_RUN_HEADER), request.header(MAX_CREDITS_HEADER), { dryRun: DRY_RUN_HEADER, maxCredits: MAX_CREDITS_HEADER });
  if (budget.dryRun && request.method !== 'GET') throw badRequest(`${DRY_RUN_HEADER} prices reads (GET); ${request.method} ${request.path} is free, and is not run as a dry run`);
  return budget;
}

/** `RateLimit-Policy` and `RateLimit` on every authenticated response; `Retry-After` on a refusal. */
export function setRateHeaders(res: Response | undefined, principal: Principal): void {
  if (!res) return;
  const h = rateLimitHeaders(principal.rate);
  if (!h) return;
  res.setHeader(HEADER.rateLimitPolicy, h.policy);
  res.setHeader(HEADER.rateLimit, h.state);
  if (!principal.rate.allowed) res.setHeader(HEADER.retryAfter, String(principal.rate.retryAfterSeconds));
}

/**
 * 400 for a query parameter the route does not take (after the key and the tier, as the check
 * order wants). A misspelt or array-style name (`tickers[]=AAPL`, as qs-style clients send
 * arrays) would otherwise be ignored, and the call answered and billed as if it were absent: for
 * `tickers`, the whole universe.
 */
function rejectUnknownQuery(request: Request, queryParams: ReadonlyMap<string, ReadonlySet<string>>): void {
  const declared = queryParams.get((request.route as { path?: string } | undefined)?.path ?? '');
  if (!declared) return;
  const unknown = Object.keys(request.query).filter((name) => !declared.has(name));
  if (unknown.length === 0) return;
  const takes = declared.size ? `it takes ${[...declared].join(', ')}` : 'it takes none';
  throw badRequest(`unknown query parameter${unknown.length === 1 ? '' : 's'} ${unknown.map((n) => JSON.stringify(n)).join(', ')}: ${takes} (send a list as one comma-separated value)`, {
    errors: unknown.map((parameter) => ({ parameter, message: 'is not a parameter of this endpoint' })),
  });
}
