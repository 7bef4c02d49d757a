/**
 * One error family for the whole service. Every refusal a client can see carries a stable `code`
 * and an HTTP status; `src/app/http/problem.ts` is the one place that turns it into problem+json.
 */
export type ErrorCode =
  | 'bad_request'
  | 'cursor_invalid'
  | 'unauthorized'
  | 'key_forbidden'
  | 'key_expired'
  | 'key_scope_forbidden'
  | 'coverage'
  | 'tier'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'delivery_expired'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'range_not_satisfiable'
  | 'headers_too_large'
  | 'limit_exceeded'
  | 'credits_exhausted'
  | 'cost_exceeds_max'
  | 'key_budget_exhausted'
  | 'rate_limited'
  | 'conflict'
  | 'internal';

const STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  cursor_invalid: 400,
  unauthorized: 401,
  key_forbidden: 403,
  key_expired: 403,
  key_scope_forbidden: 403,
  coverage: 403,
  tier: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  delivery_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  headers_too_large: 431,
  limit_exceeded: 422,
  credits_exhausted: 429,
  // 403 as `tier` and `coverage`: a well-formed call refused by a rule, which waiting does not change.
  cost_exceeds_max: 403,
  key_budget_exhausted: 429,
  rate_limited: 429,
  conflict: 409,
  internal: 500,
};

const TITLE: Record<ErrorCode, string> = {
  bad_request: 'Bad request',
  cursor_invalid: 'Sync cursor not valid here',
  unauthorized: 'Authentication required',
  key_forbidden: 'API key not allowed',
  key_expired: 'API key expired',
  key_scope_forbidden: 'Operation not allowed for this key',
  coverage: 'Outside your coverage',
  tier: 'Plan tier too low',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  request_timeout: 'Request timeout',
  delivery_expired: 'Delivery too old to resend',
  payload_too_large: 'Request body too large',
  unsupported_media_type: 'Unsupported request body encoding',
  range_not_satisfiable: 'Range not satisfiable',
  headers_too_large: 'Request line or headers too large',
  limit_exceeded: 'Parameter above its maximum',
  credits_exhausted: 'Credits exhausted',
  cost_exceeds_max: 'Call would cost more than your maximum',
  key_budget_exhausted: 'Key spend limit reached',
  rate_limited: 'Too many requests',
  conflict: 'Conflict',
  internal: 'Internal error',
};

export class AppError extends Error {
  readonly status: number;
  readonly title: string;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(detail);
    this.name = 'AppError';
    this.status = STATUS[code];
    this.title = TITLE[code];
  }
}

export const badRequest = (detail: string, ext?: Record<string, unknown>) => new AppError('bad_request', detail, ext);
export const notFound = (detail: string) => new AppError('not_found', detail);

/** Raised by an EventStore when the expected revision does not match the stream's. */
export class ConcurrencyError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: unknown,
    readonly actual: number | null,
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${actual === null ? 'no stream' : actual}`);
    this.name = 'ConcurrencyError';
  }
}

/** Every error code, in the table's order: the OpenAPI document's enum of `ProblemDetails.code`, and meta's `code` field. */
export const ERROR_CODES = Object.keys(STATUS) as ErrorCode[];

export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}
export function titleOf(code: ErrorCode): string {
  return TITLE[code];
}
