import { PLANS, TIERS, type Tier } from '../domain/plans.js';
import { type ErrorCode, statusOf, titleOf } from '../core/errors.js';

/** RFC 9457 problem details, as REST sends them and MCP tools return them. */
export interface ProblemDetails {
  /**
   * A URI naming the problem type; resolves to the error reference in the docs.
   * @format uri
   */
  type: string;
  title: string;
  /**
   * The response's HTTP status.
   * @isInt
   */
  status: number;
  detail: string;
  /** Stable machine-readable code; `/docs/errors#<code>` says what it means and what to do. */
  code: ErrorCode;
  /** Set on validation errors: what was wrong with each parameter. */
  errors?: { parameter: string; message: string }[];
  [extension: string]: unknown;
}

export function problemOf(code: ErrorCode, detail: string, baseUrl: string, extensions: Record<string, unknown> = {}): ProblemDetails {
  return {
    type: `${baseUrl}/docs/errors#${code}`,
    title: titleOf(code),
    status: statusOf(code),
    detail,
    code,
    ...extensions,
  };
}

type Schema = Record<string, unknown>;

/** A field a problem of some code carries besides RFC 9457's and `code`. */
export interface ProblemField {
  schema: Schema;
  /** Sent with every problem of the code (else only with some). */
  required: boolean;
  /** The value the OpenAPI document's examples show. */
  example: unknown;
}

const PARAMETER_ERRORS: Schema = {
  type: 'array',
  description: 'What was wrong with each parameter.',
  items: {
    type: 'object',
    required: ['parameter', 'message'],
    additionalProperties: false,
    properties: { parameter: { type: 'string' }, message: { type: 'string' } },
  },
};
const errorsOf = (required: boolean): ProblemField => ({ schema: PARAMETER_ERRORS, required, example: [{ parameter: 'limit', message: 'must be an integer (got "ten")' }] });
const count = (minimum: number, description: string): Schema => ({ type: 'integer', minimum, description });
const tierField = (description: string, example: Tier): ProblemField => ({ schema: { type: 'string', enum: [...TIERS], description }, required: true, example });

/**
 * The fields each code's problems carry besides the standard ones, and no others: the one list the
 * error sites keep to and the OpenAPI document types each code's problem from (`<Code>Problem`,
 * `additionalProperties: false`), so a client reads `required_tier` of a `tier` problem as a tier.
 */
export const PROBLEM_FIELDS: Record<ErrorCode, Record<string, ProblemField>> = {
  bad_request: { errors: errorsOf(false) },
  cursor_invalid: { errors: errorsOf(true) },
  unauthorized: {},
  key_forbidden: {},
  key_expired: {
    expires_at: { schema: { type: 'string', format: 'date-time', description: 'When the key expired.' }, required: true, example: '2026-11-30T00:00:00.000Z' },
  },
  key_scope_forbidden: {
    scope: { schema: { type: 'string', enum: ['all', 'read_only'], description: 'The key’s scope: `read_only` keys make GET calls only.' }, required: true, example: 'read_only' },
    operations: { schema: { type: 'array', nullable: true, items: { type: 'string' }, description: 'The operations (rate-card keys) the key may call; null: all its scope allows.' }, required: true, example: null },
    operation: { schema: { type: 'string', nullable: true, description: 'The operation (rate-card key) refused.' }, required: true, example: 'webhooks' },
  },
  coverage: {
    coverage: { schema: { type: 'string', enum: [...new Set(Object.values(PLANS).map((p) => p.coverage))], description: 'Your plan’s coverage.' }, required: true, example: 'top100' },
    outside_coverage: { schema: { type: 'array', items: { type: 'string' }, description: 'The tickers asked for that your coverage does not include.' }, required: true, example: ['TSLA'] },
  },
  tier: {
    required_tier: tierField('The lowest plan that may make the call.', 'quant'),
    tier: tierField('The key’s plan.', 'builder'),
  },
  not_found: {
    unknown_tickers: { schema: { type: 'array', items: { type: 'string' }, description: 'The tickers of a list that name no stock.' }, required: false, example: ['ZZZZZ'] },
  },
  method_not_allowed: {},
  request_timeout: {},
  delivery_expired: {
    made_at: { schema: { type: 'string', format: 'date-time', description: 'When the delivery was made (a live message queued, a test sent); it could be resent for 30 days from then.' }, required: true, example: '2026-10-01T12:00:00.000Z' },
  },
  payload_too_large: {},
  unsupported_media_type: {},
  range_not_satisfiable: {},
  headers_too_large: {},
  limit_exceeded: {
    maximum: { schema: count(0, 'The most the call takes: of the parameter named in `errors`, or of the rows, webhooks, … the detail names.'), required: true, example: 100 },
    errors: errorsOf(false),
  },
  credits_exhausted: {
    credits_remaining: { schema: { type: 'integer', nullable: true, description: 'Credits left of the monthly allowance (as `GET /v1/usage` says).' }, required: true, example: 0 },
    prepaid_credits: { schema: count(0, 'Prepaid pack credits left.'), required: true, example: 0 },
    cost: { schema: count(1, 'The credits the call would have cost.'), required: true, example: 2 },
    resets_at: { schema: { type: 'string', format: 'date-time', nullable: true, description: 'When the allowance resets.' }, required: true, example: '2026-12-01T00:00:00.000Z' },
  },
  cost_exceeds_max: {
    max_credits: { schema: count(0, 'The maximum you sent (`X-Max-Credits`, or the MCP argument `max_credits`).'), required: true, example: 10 },
    cost: { schema: count(1, 'What the call would have cost, when it was known before any row was read (every call priced per call, and per constituent).'), required: false, example: 100 },
    cost_at_least: {
      schema: count(1, 'Sent instead of `cost` for a call priced per row: the rows were counted only as far as your maximum, so the call costs at least this (a dry run, `X-Dry-Run: true`, gives the exact price).'),
      required: false,
      example: 11,
    },
  },
  key_budget_exhausted: {
    key_id: { schema: { type: 'string', description: 'The key whose limit the call would pass.' }, required: true, example: 'key_3kTz9c2Lb' },
    limit: { schema: count(1, 'The key’s limit in that window, in credits.'), required: true, example: 1_000 },
    window: { schema: { type: 'string', enum: ['day', 'month'], description: 'The limit’s window: the UTC day or the UTC month.' }, required: true, example: 'day' },
    spent: { schema: count(0, 'Credits the key spent in that window so far.'), required: true, example: 998 },
    cost: { schema: count(1, 'The credits the call would have cost.'), required: true, example: 3 },
    resets_at: { schema: { type: 'string', format: 'date-time', description: 'When the window starts again (00:00 UTC the next day, or on the 1st of next month).' }, required: true, example: '2026-11-28T00:00:00.000Z' },
    retry_after_seconds: { schema: count(1, 'Seconds until then, as `Retry-After` says.'), required: true, example: 3_600 },
  },
  rate_limited: {
    retry_after_seconds: { schema: count(1, 'Seconds to wait, as `Retry-After` says.'), required: true, example: 1 },
    per_second: { schema: count(1, 'The key’s request rate (not sent for requests without a valid key).'), required: false, example: 10 },
    bytes_per_second: {
      schema: count(1, 'Sent instead of `per_second` when what is spent is the account’s budget of free answers’ bytes (the track record, meta, coverage, usage, lists): its bytes per second.'),
      required: false,
      example: 262_144,
    },
  },
  conflict: {
    amount_cents: { schema: count(0, 'The prorated amount now due, in cents.'), required: false, example: 4_000 },
    pack_id: { schema: { type: 'string', description: 'The purchase reference.' }, required: false, example: 'pack-1' },
    credits: { schema: count(0, 'The credits that purchase bought.'), required: false, example: 500 },
  },
  internal: {},
};
