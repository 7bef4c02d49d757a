/**
 * Answers that are an account's own: its balance and credit ledger, its request log, its webhooks
 * and the signing secret a new webhook's 201 carries. Never stored by a cache, the browser's or one on the way
 * (`Cache-Control: no-store`, as Stripe answers), errors included. The account pages and their
 * invoices send the same (`account/account-web.ts`).
 */
import type { NextFunction, Request, Response } from 'express';
import { HEADER, NO_STORE } from '../../web/response-headers.js';

/** The private /v1 paths: each of these, and every path under it. */
export const PRIVATE_PATH_PREFIXES = ['/v1/usage', '/v1/requests', '/v1/webhooks'];

/** Whether a path (the document's or a request's) is private: what the OpenAPI document declares `no-store` on. */
export const isPrivatePath = (path: string): boolean => PRIVATE_PATH_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`));

/** `Cache-Control: no-store`, set before the route runs so that its refusals carry it too. */
export function noStore(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader(HEADER.cacheControl, NO_STORE);
  next();
}
