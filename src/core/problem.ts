import { type ErrorCode, statusOf, titleOf } from './errors.js';

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
