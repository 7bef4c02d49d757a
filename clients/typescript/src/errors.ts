import type { components } from './generated/schema.js';

/** A problem of any code: the document's `ProblemDetails`, one schema per code, told apart by `code`. */
export type Problem = components['schemas']['ProblemDetails'];
export type ErrorCode = Problem['code'];
/** The problem of one code, with the members that code carries (`errors`, `required_tier`, …). */
export type ProblemOf<C extends ErrorCode> = Extract<Problem, { code: C }>;

/**
 * The base of every error the SDK throws: `ScoresApiError` (a problem+json answer, a subclass per
 * code), `ScoresHttpError` (an answer that is not one), `ScoresNetworkError` (no answer),
 * `ScoresConfigurationError` and `WebhookVerificationError`.
 */
export class ScoresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A problem+json answer of the API, thrown by every call that does not succeed. `instanceof` the
 * subclass of its `code` (`RateLimitedError`, `CreditsExhaustedError`, ...) to handle one case.
 */
export class ScoresApiError<C extends ErrorCode = ErrorCode> extends ScoresError {
  readonly status: number;
  readonly code: C;
  readonly title: string;
  readonly detail: string;
  /** The whole problem body, extensions included (`errors`, `unknown_tickers`, `required_tier`, ...). */
  readonly problem: ProblemOf<C>;
  /** `X-Request-Id` of the answer: quote it to support. */
  readonly requestId: string | null;
  /** `Retry-After` in seconds, when the answer carries one. */
  readonly retryAfter: number | null;

  constructor(problem: ProblemOf<C>, response: Response) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`);
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.problem = problem;
    this.requestId = response.headers.get('x-request-id');
    this.retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
  }
}

export class BadRequestError extends ScoresApiError<'bad_request'> {}
export class CursorInvalidError extends ScoresApiError<'cursor_invalid'> {}
export class UnauthorizedError extends ScoresApiError<'unauthorized'> {}
export class KeyForbiddenError extends ScoresApiError<'key_forbidden'> {}
/** 403: the key is past its expiry (`expires_at`). */
export class KeyExpiredError extends ScoresApiError<'key_expired'> {}
/** 403: the key may not make this call (read-only, or limited to other operations); nothing was read or charged. */
export class KeyScopeForbiddenError extends ScoresApiError<'key_scope_forbidden'> {}
export class CoverageError extends ScoresApiError<'coverage'> {}
export class TierError extends ScoresApiError<'tier'> {}
export class NotFoundError extends ScoresApiError<'not_found'> {}
export class MethodNotAllowedError extends ScoresApiError<'method_not_allowed'> {}
export class RequestTimeoutError extends ScoresApiError<'request_timeout'> {}
/** 410: a webhook delivery made more than 30 days ago, which can no longer be resent (`made_at` says when it was made). */
export class DeliveryExpiredError extends ScoresApiError<'delivery_expired'> {}
export class PayloadTooLargeError extends ScoresApiError<'payload_too_large'> {}
export class UnsupportedMediaTypeError extends ScoresApiError<'unsupported_media_type'> {}
export class RangeNotSatisfiableError extends ScoresApiError<'range_not_satisfiable'> {}
export class HeadersTooLargeError extends ScoresApiError<'headers_too_large'> {}
export class LimitExceededError extends ScoresApiError<'limit_exceeded'> {}
/** 429: the account's credits are spent. Never retried: waiting does not bring credits back. */
export class CreditsExhaustedError extends ScoresApiError<'credits_exhausted'> {}
/** 403: the call would cost more than the maximum sent with it (`maxCredits`); nothing was charged. Never retried: the same call costs the same. */
export class CostExceedsMaxError extends ScoresApiError<'cost_exceeds_max'> {}
/** 429: the call would take the key past its daily or monthly credit limit. Not retried: `retryAfter` is the window's reset, hours away. */
export class KeyBudgetExhaustedError extends ScoresApiError<'key_budget_exhausted'> {}
/** 429: too many requests per second, or (with `bytes_per_second`) too many bytes of free answers. Retried by the client after `Retry-After`. */
export class RateLimitedError extends ScoresApiError<'rate_limited'> {}
export class ConflictError extends ScoresApiError<'conflict'> {}
export class InternalError extends ScoresApiError<'internal'> {}

/** One class per problem code of the document: a code added there fails to compile here. */
export const ERROR_CLASSES: { readonly [C in ErrorCode]: new (problem: ProblemOf<C>, response: Response) => ScoresApiError<C> } = {
  bad_request: BadRequestError,
  cursor_invalid: CursorInvalidError,
  unauthorized: UnauthorizedError,
  key_forbidden: KeyForbiddenError,
  key_expired: KeyExpiredError,
  key_scope_forbidden: KeyScopeForbiddenError,
  coverage: CoverageError,
  tier: TierError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  request_timeout: RequestTimeoutError,
  delivery_expired: DeliveryExpiredError,
  payload_too_large: PayloadTooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  range_not_satisfiable: RangeNotSatisfiableError,
  headers_too_large: HeadersTooLargeError,
  limit_exceeded: LimitExceededError,
  credits_exhausted: CreditsExhaustedError,
  cost_exceeds_max: CostExceedsMaxError,
  key_budget_exhausted: KeyBudgetExhaustedError,
  rate_limited: RateLimitedError,
  conflict: ConflictError,
  internal: InternalError,
};

/** A non-problem failure (a proxy's HTML 502, say): status and text, no code. */
export class ScoresHttpError extends ScoresError {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body.slice(0, 200)}`);
  }
}

/**
 * No answer: the connection was refused or reset, or the request timed out (`timeoutMs`). A GET or
 * DELETE is retried with backoff first; `cause` is fetch's error.
 */
export class ScoresNetworkError extends ScoresError {
  constructor(
    readonly method: string,
    readonly url: string,
    cause: unknown,
  ) {
    super(`${method} ${url}: ${describe(cause)}`, { cause });
  }
}

/** The client cannot be made as asked (no API key given nor in `SCORES_API_KEY`, say). */
export class ScoresConfigurationError extends ScoresError {}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${(error.cause as Error & { code?: string }).code ?? error.cause.message}` : '';
  return `${error.name}: ${error.message}${cause}`;
}

const isProblem = (x: unknown): x is Problem =>
  typeof x === 'object' && x !== null && typeof (x as Problem).code === 'string' && typeof (x as Problem).status === 'number';

/** The typed error of a failed response (its body is read). */
export async function errorOf(response: Response): Promise<ScoresApiError | ScoresHttpError> {
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: a ScoresHttpError below
  }
  if (!isProblem(body)) return new ScoresHttpError(response.status, text);
  // The body's own code picks the class; the document's union says which members it has.
  const Class = (Object.hasOwn(ERROR_CLASSES, body.code) ? ERROR_CLASSES[body.code] : ScoresApiError) as new (problem: Problem, response: Response) => ScoresApiError;
  return new Class(body, response);
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}
