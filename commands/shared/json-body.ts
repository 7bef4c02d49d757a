import express, { type RequestHandler } from 'express';
import { AppError } from '../../src/core/errors.js';

/** Largest request body the write side's JSON endpoints read (a webhook registration is a type and a URL of at most 2,048 characters; a key's limits less). */
export const COMMAND_BODY_LIMIT = 16 * 1024;

const parseJson = express.json({ limit: COMMAND_BODY_LIMIT });

/**
 * The body of a command: JSON only (415 for a body of another type, 413 over 16 KiB, 400 when it
 * does not parse; the problem handler answers each). A tsoa middleware, so it runs after the key,
 * the plan and the query are checked: an unauthenticated caller's body is never read, and each
 * refusal carries the caller's `X-Credits-Remaining`.
 */
export const jsonBody: RequestHandler = (req, res, next) => {
  // An empty body (`Content-Length: 0`, as clients send a bodiless POST) needs no type; any other
  // body must be JSON (`req.is`: false for another type or none).
  const empty = req.headers['content-length'] === '0' && req.headers['transfer-encoding'] === undefined;
  if (empty) return next();
  if (req.is('application/json') === false) {
    next(new AppError('unsupported_media_type', `the request body must be application/json (got ${JSON.stringify(req.get('content-type') ?? 'no content type')})`));
    return;
  }
  parseJson(req, res, next);
};
