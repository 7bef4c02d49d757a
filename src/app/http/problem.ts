import type { ErrorRequestHandler, Request, Response } from 'express';
import { ValidateError } from '@tsoa/runtime';
import { AppError, ConcurrencyError } from '../../core/errors.js';
import { problemOf, type ProblemDetails } from '../../web/problem.js';
import type { Meter } from '../../web/meter.port.js';
import type { AuthedRequest } from '../../web/meter.port.js';
import { CREDITS_HEADER } from '../../web/meter.port.js';
import { API_KEY_CHALLENGE, HEADER } from '../../web/response-headers.js';

export const PROBLEM_JSON = 'application/problem+json';

/** Where sendProblem leaves the problem's code: the 429 counter and the access log read it (metrics.routes.ts). */
export const PROBLEM_CODE_LOCAL = 'problem_code';

export function sendProblem(res: Response, problem: ProblemDetails): void {
  res.locals[PROBLEM_CODE_LOCAL] = problem.code;
  // Every 401, REST's and MCP's, says how to authenticate (RFC 9110 §11.6.1).
  if (problem.status === 401) res.setHeader(HEADER.wwwAuthenticate, API_KEY_CHALLENGE);
  // Every 429 says when to come back, whichever step refused the call.
  const retryAfter = (problem as { retry_after_seconds?: unknown }).retry_after_seconds;
  if (problem.status === 429 && typeof retryAfter === 'number' && !res.hasHeader(HEADER.retryAfter)) res.setHeader(HEADER.retryAfter, String(retryAfter));
  res.status(problem.status).type(PROBLEM_JSON).send(JSON.stringify(problem));
}

/** Turns tsoa's validation errors into a parameter-by-parameter 400 problem. */
function fromValidateError(err: ValidateError, baseUrl: string): ProblemDetails {
  const errors = Object.entries(err.fields).map(([field, info]) => ({
    parameter: field.replace(/^(query|path|body|header)\./, ''),
    message: info.message,
  }));
  return problemOf('bad_request', errors.map((e) => `${e.parameter}: ${e.message}`).join('; '), baseUrl, { errors });
}

/**
 * The one place errors become problem+json (RFC 9457). Bad input is never a 500. A response to an
 * authenticated caller carries `X-Credits-Remaining` even when it is an error.
 */
export function problemHandler(
  baseUrl: () => string,
  log: { error(obj: unknown, msg: string): void },
  meter: Pick<Meter, 'remaining'>,
): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    // A body cut off after its answer went out (client-limits.ts cuts a slow one): nothing is left to say.
    if (res.headersSent && res.writableEnded && (err as { type?: unknown } | undefined)?.type === 'request.aborted') return;
    if (res.headersSent) return next(err);
    const user = (req as AuthedRequest).user;
    (user ? meter.remaining(user) : Promise.resolve(null))
      .then((value) => {
        if (value !== null && !res.headersSent) res.setHeader(CREDITS_HEADER, value);
      })
      .catch(() => undefined)
      .finally(() => respond(err, req, res));
  };

  function respond(err: unknown, req: Request, res: Response): void {
    if (err instanceof AppError) return sendProblem(res, problemOf(err.code, err.detail, baseUrl(), err.extensions));
    if (err instanceof ValidateError) return sendProblem(res, fromValidateError(err, baseUrl()));
    // A command that lost every race for its stream to another replica (the ledger retries 25
    // times first) changed nothing: the caller may send it again, as after any 429.
    if (err instanceof ConcurrencyError) {
      const detail = 'this account was changed by requests served by another process at the same moment; nothing was changed: retry in 1 s';
      return sendProblem(res, problemOf('rate_limited', detail, baseUrl(), { retry_after_seconds: 1 }));
    }
    const e = err as { type?: string; status?: number; message?: string; charset?: string };
    if (err instanceof URIError || (e?.status === 400 && /decode param/i.test(e.message ?? ''))) {
      return sendProblem(res, problemOf('bad_request', 'the path is not valid percent-encoded UTF-8', baseUrl()));
    }
    if (e?.status === 413) return sendProblem(res, problemOf('payload_too_large', 'request body too large', baseUrl()));
    if (e?.status === 415) {
      const what = e.type === 'charset.unsupported' ? `charset ${JSON.stringify(e.charset ?? '')}` : 'content encoding';
      return sendProblem(res, problemOf('unsupported_media_type', `the request body's ${what} is not supported: send UTF-8 JSON`, baseUrl()));
    }
    if (e?.status === 400) return sendProblem(res, problemOf('bad_request', `malformed request: ${e.message ?? 'bad request'}`, baseUrl()));
    log.error({ err, path: req.path }, 'unhandled error');
    sendProblem(res, problemOf('internal', 'the service failed to answer; the error was logged', baseUrl()));
  }
}
