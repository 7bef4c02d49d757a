import type { components } from './generated/schema.js';

export type ErrorCode = components['schemas']['ErrorCode'];
export type Problem = components['schemas']['ProblemDetails'];

/**
 * A problem+json answer of the API, thrown by every call that does not succeed. `instanceof` the
 * subclass of its `code` (`RateLimitedError`, `CreditsExhaustedError`, ...) to handle one case.
 */
export class ScoresApiError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly title: string;
  readonly detail: string;
  /** The whole problem body, extensions included (`errors`, `unknown_tickers`, `required_tier`, ...). */
  readonly problem: Problem;
  /** `X-Request-Id` of the answer: quote it to support. */
  readonly requestId: string | null;
  /** `Retry-After` in seconds, when the answer carries one. */
  readonly retryAfter: number | null;

  constructor(problem: Problem, response: Response) {
    super(`${problem.status} ${problem.code}: ${problem.detail}`);
    this.name = new.target.name;
    this.status = problem.status;
    this.code = problem.code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.problem = problem;
    this.requestId = response.headers.get('x-request-id');
    this.retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
  }
}

export class BadRequestError extends ScoresApiError {}
export class CursorInvalidError extends ScoresApiError {}
export class UnauthorizedError extends ScoresApiError {}
export class KeyForbiddenError extends ScoresApiError {}
export class CoverageError extends ScoresApiError {}
export class TierError extends ScoresApiError {}
export class NotFoundError extends ScoresApiError {}
export class MethodNotAllowedError extends ScoresApiError {}
export class PayloadTooLargeError extends ScoresApiError {}
export class UnsupportedMediaTypeError extends ScoresApiError {}
export class RangeNotSatisfiableError extends ScoresApiError {}
export class HeadersTooLargeError extends ScoresApiError {}
export class LimitExceededError extends ScoresApiError {}
/** 429: the account's credits are spent. Never retried: waiting does not bring credits back. */
export class CreditsExhaustedError extends ScoresApiError {}
/** 429: too many requests per second. Retried by the client after `Retry-After`. */
export class RateLimitedError extends ScoresApiError {}
export class ConflictError extends ScoresApiError {}
export class InternalError extends ScoresApiError {}

/** One class per code of the document's `ErrorCode`: a code added there fails to compile here. */
export const ERROR_CLASSES: { readonly [C in ErrorCode]: typeof ScoresApiError } = {
  bad_request: BadRequestError,
  cursor_invalid: CursorInvalidError,
  unauthorized: UnauthorizedError,
  key_forbidden: KeyForbiddenError,
  coverage: CoverageError,
  tier: TierError,
  not_found: NotFoundError,
  method_not_allowed: MethodNotAllowedError,
  payload_too_large: PayloadTooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  range_not_satisfiable: RangeNotSatisfiableError,
  headers_too_large: HeadersTooLargeError,
  limit_exceeded: LimitExceededError,
  credits_exhausted: CreditsExhaustedError,
  rate_limited: RateLimitedError,
  conflict: ConflictError,
  internal: InternalError,
};

/** A non-problem failure (a proxy's HTML 502, say): status and text, no code. */
export class ScoresHttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body.slice(0, 200)}`);
    this.name = 'ScoresHttpError';
  }
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
  const Class = Object.hasOwn(ERROR_CLASSES, body.code) ? ERROR_CLASSES[body.code] : ScoresApiError;
  return new Class(body, response);
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}
