import type { Request } from 'express';
import { randomBytes } from 'node:crypto';
import type { Services } from '../container.js';
import { AppError, badRequest } from '../../core/errors.js';
import { entitlementsOf, tierAtLeast, type Entitlements, type Tier } from '../../domain/plans.js';
import { RATE_CARD, endpointOf, isRateKey, type RateKey } from '../../domain/rate-card.js';
import { apiKeys } from '../../../projections/api-keys/api-keys.projection.js';
import { hashApiKey } from '../../domain/api-keys.js';
import { stateAt } from '../../domain/ledger/ledger.figures.js';

/** Who is calling: the account behind the key and what its plan entitles it to right now. */
export interface Principal {
  account_id: string;
  key_id: string;
  tier: Tier;
  pro: boolean;
  entitlements: Entitlements;
  request_id: string;
}

/** `channel` says which face took the call (the ledger records it); absent means REST. */
export type AuthedRequest = Request & { user?: Principal; requestId?: string; channel?: 'rest' | 'mcp' };

const REQUEST_ID_BYTES = 12;
let idPool = Buffer.alloc(0);
let idOffset = 0;

/**
 * A new request id: `req_` and 96 random bits. The bits come from a pool refilled 256 ids at a
 * time (as `crypto.randomUUID` does), since one `randomBytes` call per request is measurable.
 */
export function newRequestId(): string {
  if (idOffset + REQUEST_ID_BYTES > idPool.length) {
    idPool = randomBytes(REQUEST_ID_BYTES * 256);
    idOffset = 0;
  }
  const id = idPool.toString('base64url', idOffset, idOffset + REQUEST_ID_BYTES);
  idOffset += REQUEST_ID_BYTES;
  return `req_${id}`;
}

export function requestIdOf(req: AuthedRequest): string {
  return (req.requestId ??= newRequestId());
}

/**
 * tsoa's security hook for `@Security('api_key', [rateKey])`: 401 for a missing or unknown key,
 * 403 `key_forbidden` for a revoked key (or a rotated one past its grace period), 403 `tier`
 * when the plan is below the endpoint's minimum tier in the rate card. Runs before parameter
 * validation, so the check order is key, tier, parameters.
 */
export async function expressAuthentication(request: Request, securityName: string, scopes?: string[]): Promise<Principal> {
  if (securityName !== 'api_key') throw new AppError('internal', `unknown security scheme ${securityName}`);
  const services = request.app.locals['services'] as Services;
  const principal = await authenticate(services, request.header('x-api-key'), request as AuthedRequest);
  const endpoint = scopes?.[0];
  if (endpoint) {
    if (!isRateKey(endpoint)) throw new AppError('internal', `security scope ${endpoint} is not a rate-card key`);
    requireTier(principal, endpoint);
  }
  rejectUnknownQuery(request);
  return principal;
}

/**
 * 400 for a query parameter the route does not take (after the key and the tier, as the check
 * order wants). A misspelt or array-style name (`tickers[]=AAPL`, as qs-style clients send
 * arrays) would otherwise be ignored, and the call answered and billed as if it were absent: for
 * `tickers`, the whole universe.
 */
function rejectUnknownQuery(request: Request): void {
  const declared = (request.app.locals['queryParams'] as Map<string, ReadonlySet<string>> | undefined)?.get((request.route as { path?: string } | undefined)?.path ?? '');
  if (!declared) return;
  const unknown = Object.keys(request.query).filter((name) => !declared.has(name));
  if (unknown.length === 0) return;
  const takes = declared.size ? `it takes ${[...declared].join(', ')}` : 'it takes none';
  throw badRequest(`unknown query parameter${unknown.length === 1 ? '' : 's'} ${unknown.map((n) => JSON.stringify(n)).join(', ')}: ${takes} (send a list as one comma-separated value)`, {
    errors: unknown.map((parameter) => ({ parameter, message: 'is not a parameter of this endpoint' })),
  });
}

/** 403 `tier` when the caller's plan is below the endpoint's minimum (shared by REST and MCP). */
export function requireTier(principal: Principal, endpoint: RateKey): void {
  const min = RATE_CARD[endpoint].min_tier;
  if (!tierAtLeast(principal.tier, min)) {
    throw new AppError('tier', `${endpointOf(endpoint)} needs the ${min} plan or higher; this key is on ${principal.tier}`, {
      required_tier: min,
      tier: principal.tier,
    });
  }
}

/** Resolves an API key to its principal (shared by REST and MCP). */
export async function authenticate(services: Services, key: string | undefined, req?: AuthedRequest): Promise<Principal> {
  if (!key) throw new AppError('unauthorized', 'send your API key in the X-API-Key header');
  // Node joins repeated headers with ", "; no key holds a comma.
  if (key.includes(',')) throw new AppError('unauthorized', 'send one X-API-Key header (this request has several)');
  const hash = hashApiKey(key.trim());
  const doc = await services.keyLookup(hash, () => services.reads.get(apiKeys, hash));
  if (!doc) throw new AppError('unauthorized', 'unknown API key');
  const now = services.clock.now();
  if (doc.status === 'revoked') throw new AppError('key_forbidden', `key ${doc.prefix}… was revoked`);
  if (doc.status === 'rotated' && (doc.grace_until === null || doc.grace_until <= now.toISOString())) {
    throw new AppError('key_forbidden', `key ${doc.prefix}… was rotated and its grace period ended at ${doc.grace_until ?? 'once'}`);
  }
  const ledger = stateAt(await services.ledger.state(doc.account_id), now);
  const principal: Principal = {
    account_id: doc.account_id,
    key_id: doc.key_id,
    tier: ledger.tier,
    pro: ledger.pro,
    entitlements: entitlementsOf(ledger.tier, ledger.pro),
    request_id: req ? requestIdOf(req) : newRequestId(),
  };
  if (req) req.user = principal;
  return principal;
}
