/**
 * Fair use of shared capacity on the HTTP face: compressed bodies for clients that accept them,
 * validators for the large free bodies that change at most once a day, so a client polling them
 * gets a 304 instead of the same megabyte again, and each account's budget of free answers' bytes
 * (src/app/metering/free-answer-bytes.ts) checked and counted where a free answer is written.
 */
import compression from 'compression';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import fresh from 'fresh';
import { createHash } from 'node:crypto';
import { constants } from 'node:zlib';
import { DAILY_CACHE_CONTROL, HEADER } from '../../web/response-headers.js';
import type { FreeAnswerBytes, FreeAnswerCaller } from '../metering/free-answer-bytes.js';

/** Where a free call's response keeps its budget (set by the security hook, read where its JSON is written). */
const FREE_ANSWER = 'freeAnswer';

/** A free answer's budget: `check` throws 429 `rate_limited` when it is spent, `sent` counts the bytes written. */
export interface FreeAnswerMeter {
  check(): void;
  sent(bytes: number): void;
}

/** Marks `res` as the answer to a free call of `caller`: its 200 JSON body is checked against and counted in the account's budget. */
export function meterFreeAnswer(res: Response, budget: FreeAnswerBytes, caller: FreeAnswerCaller): void {
  const meter: FreeAnswerMeter = { check: () => budget.check(caller), sent: (bytes) => budget.take(caller, bytes) };
  res.locals[FREE_ANSWER] = meter;
}

/**
 * The budget of a 200 answer to a free call, if it is one. The JSON writers check it before they
 * serialise (a refusal is thrown to the route's error handler, so the call is answered with the
 * problem instead) and count the text they write, with nothing awaited in between.
 */
export function freeAnswerOf(res: Response): FreeAnswerMeter | undefined {
  return res.statusCode === 200 ? (res.locals[FREE_ANSWER] as FreeAnswerMeter | undefined) : undefined;
}

/**
 * gzip or br (the client's choice, br preferred by the middleware) for bodies of 1 KiB and more;
 * smaller ones (a single ticker's scores) go as they are, as compressing them saves nothing.
 * Brotli at quality 4: close to gzip's speed, smaller output than gzip's default.
 */
export function compressBodies(): RequestHandler {
  const compress = compression({ threshold: 1024, brotli: { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } } });
  return (req, res, next) => {
    if (req.headers['accept-encoding']) return compress(req, res, next);
    // A client that accepts no encoding gets none: the middleware's set-up (the response's write
    // and end wrapped, a header hook, a close listener) would be per call for nothing. The header
    // it would add stays, so a cache keeps the two answers apart.
    res.vary('Accept-Encoding');
    next();
  };
}

/** Free GETs whose whole body changes at most once a day (a new publication). */
export const DAILY_FREE_PATHS = ['/v1/track-record', '/v1/meta', '/v1/coverage'];

/**
 * An ETag (a hash of the JSON body) on a 200 of those paths, and 304 Not Modified when the
 * request's `If-None-Match` names it: a client that keeps the body downloads it once a day. The
 * 304 costs no bytes of the free-answer budget; a spent budget refuses before the hash, which is
 * as much work as the body.
 */
export function dailyEtag(req: Request, res: Response, next: NextFunction): void {
  const json = res.json.bind(res);
  res.json = (value?: unknown): Response => {
    if (res.statusCode !== 200 || value === undefined) return json(value);
    const budget = freeAnswerOf(res);
    budget?.check();
    const text = JSON.stringify(value);
    const tag = `W/"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
    res.setHeader(HEADER.etag, tag);
    res.setHeader(HEADER.cacheControl, DAILY_CACHE_CONTROL);
    if (fresh(req.headers, { etag: tag })) {
      res.status(304).end();
      return res;
    }
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    budget?.sent(Buffer.byteLength(text));
    res.end(text, 'utf8');
    return res;
  };
  next();
}
