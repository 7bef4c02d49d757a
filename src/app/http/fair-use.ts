/**
 * Fair use of shared capacity on the HTTP face: compressed bodies for clients that accept them,
 * and validators for the large free bodies that change at most once a day, so a client polling
 * them gets a 304 instead of the same megabyte again.
 */
import compression from 'compression';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import fresh from 'fresh';
import { createHash } from 'node:crypto';
import { constants } from 'node:zlib';
import { DAILY_CACHE_CONTROL, HEADER } from '../../web/response-headers.js';

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
 * request's `If-None-Match` names it: a client that keeps the body downloads it once a day.
 */
export function dailyEtag(req: Request, res: Response, next: NextFunction): void {
  const json = res.json.bind(res);
  res.json = (value?: unknown): Response => {
    if (res.statusCode !== 200 || value === undefined) return json(value);
    const text = JSON.stringify(value);
    const tag = `W/"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;
    res.setHeader(HEADER.etag, tag);
    res.setHeader(HEADER.cacheControl, DAILY_CACHE_CONTROL);
    if (fresh(req.headers, { etag: tag })) {
      res.status(304).end();
      return res;
    }
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(text, 'utf8');
    return res;
  };
  next();
}
