import type { Express, Response } from 'express';
import { freeAnswerOf } from './fair-use.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Gives the app a `res.json` that sends the same status, headers and bytes as express's own, on a
 * shorter path for the common case: a value, a 2xx-5xx status with a body, no Content-Type set.
 * Express's `res.json` hands its text to `res.send`, which looks up the `json escape`,
 * `json replacer` and `json spaces` settings, considers an ETag and request freshness, and parses
 * the Content-Type to set its charset. This app sets none of those settings and has ETags off, and
 * freshness needs an ETag or a Last-Modified, which no response sets. Anything else (a type set
 * beforehand, 204 or 304, `undefined`, one of those settings) takes express's path.
 *
 * Every metered call answers through it: the long path cost ~25 µs of CPU per call in
 * `npm run bench` (HTTP). `test/unit/json-response.test.ts` compares the two.
 */
export function useLeanJson(app: Express): void {
  const expressJson = app.response.json;
  const plain = ['json escape', 'json replacer', 'json spaces', 'etag fn'].every((s) => app.get(s) === undefined);
  if (!plain) return;
  app.response.json = function json(this: Response, value?: unknown): Response {
    if (value === undefined || this.statusCode === 204 || this.statusCode === 304 || this.hasHeader('Content-Type')) {
      return expressJson.call(this, value);
    }
    // A free call's answer: refused here when the account's byte budget is spent (fair-use.ts).
    const budget = freeAnswerOf(this);
    budget?.check();
    const text = JSON.stringify(value) as string | undefined;
    // A function or a symbol has no JSON text either.
    if (text === undefined) return expressJson.call(this, value);
    const bytes = Buffer.byteLength(text);
    budget?.sent(bytes);
    this.setHeader('Content-Type', JSON_TYPE);
    if (!this.hasHeader('Transfer-Encoding')) this.setHeader('Content-Length', bytes);
    // A HEAD response keeps its Content-Length; node writes no body for it.
    this.end(text, 'utf8');
    return this;
  };
}
