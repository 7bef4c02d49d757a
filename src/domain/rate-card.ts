/**
 * THE one table of endpoint costs and minimum tiers (docs/product.md, "Credit costs").
 * Metering charges from it, `/v1/usage` shows it as `rate_card`, gating reads `min_tier`, and
 * OpenAPI text / docs quote `describeCost`. REST and MCP share a key, so they cost the same.
 */
import { AppError } from '../core/errors.js';
import { selfServe, tierAtLeast, type Tier } from './plans.js';

export type RateUnit = 'call' | 'row' | 'constituent';
export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface Route {
  method: HttpMethod;
  /** Express-style template as in the spec: `/v1/scores/{ticker}`. */
  path: string;
}

export interface RateCardEntry {
  key: RateKey;
  /** The first route is the endpoint's canonical name; `webhooks` covers all its routes. */
  routes: readonly Route[];
  /** Credits per unit. 0 = free. */
  credits: number;
  unit: RateUnit;
  min_tier: Tier;
  /** The MCP tool that mirrors the endpoint (its first GET route: tools only read), when there is one. */
  mcp_tool: string | null;
}

const get = (path: string): Route[] => [{ method: 'GET', path }];

const TABLE = {
  scores: { routes: get('/v1/scores/{ticker}'), credits: 2, unit: 'call', min_tier: 'free', mcp_tool: 'get_scores' },
  history: { routes: get('/v1/scores/{ticker}/history'), credits: 1, unit: 'row', min_tier: 'free', mcp_tool: 'get_score_history' },
  social_heat: { routes: get('/v1/scores/social-heat/{ticker}'), credits: 1, unit: 'row', min_tier: 'free', mcp_tool: 'get_social_heat' },
  multi_history: { routes: get('/v1/scores/history'), credits: 1, unit: 'row', min_tier: 'free', mcp_tool: 'get_multi_ticker_history' },
  // The product's endpoint list says "2", its rate table "2 per row": per row, as docs/product.md says.
  screener: { routes: get('/v1/screener'), credits: 2, unit: 'row', min_tier: 'free', mcp_tool: 'screen_stocks' },
  divergence: { routes: get('/v1/divergence'), credits: 3, unit: 'row', min_tier: 'free', mcp_tool: 'get_divergences' },
  signals: { routes: get('/v1/signals'), credits: 2, unit: 'call', min_tier: 'free', mcp_tool: 'get_signals' },
  themes: { routes: get('/v1/themes'), credits: 2, unit: 'call', min_tier: 'free', mcp_tool: 'list_themes' },
  theme_detail: { routes: get('/v1/themes/{slug}'), credits: 1, unit: 'constituent', min_tier: 'free', mcp_tool: 'get_theme' },
  coverage: { routes: get('/v1/coverage'), credits: 0, unit: 'call', min_tier: 'free', mcp_tool: 'get_coverage' },
  earnings: { routes: get('/v1/earnings'), credits: 100, unit: 'call', min_tier: 'builder', mcp_tool: 'get_upcoming_earnings' },
  divergence_events: { routes: get('/v1/divergence/events'), credits: 10, unit: 'call', min_tier: 'quant', mcp_tool: 'get_divergence_events' },
  track_record: { routes: get('/v1/track-record'), credits: 0, unit: 'call', min_tier: 'free', mcp_tool: 'get_track_record' },
  divergence_open: { routes: get('/v1/divergence/open'), credits: 500, unit: 'call', min_tier: 'quant', mcp_tool: 'get_open_divergences' },
  usage: { routes: get('/v1/usage'), credits: 0, unit: 'call', min_tier: 'free', mcp_tool: 'get_usage' },
  // Not in the spec: the account's own credit ledger (every debit), so a user can audit a bill.
  usage_ledger: { routes: get('/v1/usage/ledger'), credits: 0, unit: 'call', min_tier: 'free', mcp_tool: 'get_usage_ledger' },
  // Not in the spec: the account's own calls of the last 30 days, answered and refused (the request log).
  requests: { routes: get('/v1/requests'), credits: 0, unit: 'call', min_tier: 'free', mcp_tool: 'get_request_log' },
  meta: { routes: get('/v1/meta'), credits: 0, unit: 'call', min_tier: 'free', mcp_tool: 'get_dataset_info' },
  // The listing and the download of each file it lists.
  bulk_exports: {
    routes: [...get('/v1/bulk/exports'), ...get('/v1/bulk/exports/{bundle_id}/{name}')],
    credits: 0,
    unit: 'call',
    min_tier: 'quant',
    mcp_tool: 'list_bulk_exports',
  },
  // The account's own keys: their limits, spend and last use, and changing their limits.
  keys: {
    routes: [
      { method: 'GET', path: '/v1/keys' },
      { method: 'PATCH', path: '/v1/keys/{key_id}' },
    ],
    credits: 0,
    unit: 'call',
    min_tier: 'free',
    mcp_tool: null,
  },
  webhooks: {
    routes: [
      { method: 'POST', path: '/v1/webhooks' },
      { method: 'GET', path: '/v1/webhooks' },
      { method: 'DELETE', path: '/v1/webhooks/{webhook_id}' },
      { method: 'POST', path: '/v1/webhooks/{webhook_id}/test' },
      { method: 'GET', path: '/v1/webhooks/{webhook_id}/deliveries' },
      { method: 'POST', path: '/v1/webhooks/{webhook_id}/enable' },
      { method: 'POST', path: '/v1/webhooks/{webhook_id}/rotate-secret' },
      { method: 'POST', path: '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend' },
      { method: 'POST', path: '/v1/webhooks/{webhook_id}/resend-failed' },
    ],
    credits: 0,
    unit: 'call',
    min_tier: 'quant',
    // The listing only: a rate key has one tool, and the deliveries of a webhook stay REST's.
    mcp_tool: 'list_webhooks',
  },
} as const satisfies Record<string, Omit<RateCardEntry, 'key'>>;

export type RateKey = keyof typeof TABLE;

export const RATE_KEYS = Object.keys(TABLE) as RateKey[];

export const RATE_CARD: Readonly<Record<RateKey, Readonly<RateCardEntry>>> = Object.freeze(
  Object.fromEntries(RATE_KEYS.map((key): [RateKey, RateCardEntry] => [key, Object.freeze({ key, ...TABLE[key] })])) as Record<
    RateKey,
    RateCardEntry
  >,
);

export function isRateKey(x: unknown): x is RateKey {
  return typeof x === 'string' && Object.hasOwn(TABLE, x);
}

/**
 * Credits a call costs. Per call: the fixed price, whatever the quantity. Per row / constituent:
 * price × quantity returned, so an empty answer costs 0.
 */
export function costOf(key: RateKey, quantity = 1): number {
  if (!Number.isSafeInteger(quantity) || quantity < 0) {
    throw new AppError('internal', `costOf(${key}): quantity must be a non-negative integer, got ${quantity}`);
  }
  const { credits, unit } = RATE_CARD[key];
  switch (unit) {
    case 'call':
      return credits;
    case 'row':
    case 'constituent':
      return credits * quantity;
    default: {
      const _exhaustive: never = unit;
      return _exhaustive;
    }
  }
}

/** `GET /v1/scores/{ticker}`; several routes are joined with ", ". */
export function endpointOf(key: RateKey): string {
  return RATE_CARD[key].routes.map((r) => `${r.method} ${r.path}`).join(', ');
}

/** 403 `tier` when a plan is below the endpoint's minimum (REST and MCP alike). */
export function requireTier(tier: Tier, endpoint: RateKey): void {
  const min = RATE_CARD[endpoint].min_tier;
  if (!tierAtLeast(tier, min)) {
    const way = selfServe(min) ? `upgrade to ${min} or higher on the account page` : `the ${min} plan is sold by contract`;
    throw new AppError('tier', `${endpointOf(endpoint)} needs the ${min} plan or higher; this key is on the ${tier} plan: ${way}`, {
      required_tier: min,
      tier,
    });
  }
}

/** The rate key of a route template, for metering middleware that knows only the route. */
export function rateKeyOf(method: string, path: string): RateKey | undefined {
  const m = method.toUpperCase();
  return RATE_KEYS.find((k) => RATE_CARD[k].routes.some((r) => r.method === m && r.path === path));
}

/** Human text for docs and OpenAPI descriptions: "3 credits per row returned", "free". */
export function describeCost(key: RateKey): string {
  const { credits, unit } = RATE_CARD[key];
  if (credits === 0) return 'free';
  const c = `${credits} credit${credits === 1 ? '' : 's'}`;
  switch (unit) {
    case 'call':
      return `${c} per call`;
    case 'row':
      return `${c} per row returned`;
    case 'constituent':
      return `${c} per constituent returned`;
    default: {
      const _exhaustive: never = unit;
      return _exhaustive;
    }
  }
}

export interface UsageRate {
  credits: number;
  unit: RateUnit;
  endpoint: string;
}

/** The `rate_card` object of `GET /v1/usage`: every endpoint, keyed as in RATE_CARD. */
export function rateCardForUsage(): Record<RateKey, UsageRate> {
  return Object.fromEntries(
    RATE_KEYS.map((k) => [k, { credits: RATE_CARD[k].credits, unit: RATE_CARD[k].unit, endpoint: endpointOf(k) }]),
  ) as Record<RateKey, UsageRate>;
}
