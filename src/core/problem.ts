import { type ErrorCode, statusOf, titleOf } from './errors.js';

/** RFC 9457 problem details, as REST sends them and MCP tools return them. */
export interface ProblemDetails {
  /** A URI naming the problem type; resolves to the error reference in the docs. */
  type: string;
  title: string;
  status: number;
  detail: string;
  /** Stable machine-readable code: bad_request, unauthorized, key_forbidden, coverage, tier, not_found, method_not_allowed, payload_too_large, unsupported_media_type, range_not_satisfiable, headers_too_large, limit_exceeded, credits_exhausted, rate_limited. */
  code: string;
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
