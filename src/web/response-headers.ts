/**
 * Every response header the API sends on purpose, in one table. The code that sets a header takes
 * its name (and its value, when the value is fixed) from here, and the OpenAPI document declares
 * each one from here (`src/app/http/openapi.ts` says which responses carry which), so a header is
 * never spelt twice. Beside it, the headers left undeclared (`TRANSPORT_HEADERS`).
 * In the kernel because the write side's download controller sets some of them too.
 */
import type { Ids } from '../core/ids.port.js';

export const HEADER = {
  requestId: 'X-Request-Id',
  creditsRemaining: 'X-Credits-Remaining',
  creditsCost: 'X-Credits-Cost',
  keyBudgetRemaining: 'X-Key-Budget-Remaining',
  rateLimit: 'RateLimit',
  rateLimitPolicy: 'RateLimit-Policy',
  retryAfter: 'Retry-After',
  allow: 'Allow',
  etag: 'ETag',
  cacheControl: 'Cache-Control',
  acceptRanges: 'Accept-Ranges',
  contentDisposition: 'Content-Disposition',
  contentRange: 'Content-Range',
  contentLength: 'Content-Length',
  wwwAuthenticate: 'WWW-Authenticate',
} as const;

export type HeaderName = (typeof HEADER)[keyof typeof HEADER];

/**
 * A request id: `req_` and 12 bytes in base64url, 16 characters. The first 6 bytes are the wall
 * clock's millisecond (big-endian), the other 6 (48 bits) random: ids made later sort later, so the
 * request log's index on them grows at its end instead of at random places (an insert cost half as
 * much; docs/benchmarks.md, "The request log"), and an id says when it was made.
 */
const REQUEST_ID_PREFIX = 'req_';
const REQUEST_ID_BYTES = 12;
const REQUEST_ID_RANDOM_BYTES = 6;
let lastMs = -1;
let lastTime = '';

/** A new request id (`X-Request-Id`, and the `request_id` of the call's ledger entry). */
export function newRequestId(ids: Ids, nowMs: number = Date.now()): string {
  if (nowMs !== lastMs) {
    const time = Buffer.alloc(6);
    time.writeUIntBE(Math.max(0, Math.min(nowMs, 2 ** 48 - 1)), 0, 6);
    lastMs = nowMs;
    lastTime = time.toString('base64url');
  }
  // 6 bytes are 8 base64url characters with no padding: the two halves join into the id's 16.
  return `${REQUEST_ID_PREFIX}${lastTime}${ids.next('', REQUEST_ID_RANDOM_BYTES)}`;
}

/** The request header that carries the API key (the document's `api_key` security scheme). */
export const API_KEY_HEADER = 'X-API-Key';
/**
 * `WWW-Authenticate` of a 401 (RFC 9110 §11.6.1: a 401 names how to authenticate). No registered
 * scheme sends a key in a header of its own; `ApiKey` with the header's name is the usual way to say so.
 */
export const API_KEY_CHALLENGE = `ApiKey realm="scores", header="${API_KEY_HEADER}"`;

/** `Cache-Control` of the daily free bodies (their 200 and 304): keep the body, revalidate it with its ETag. */
export const DAILY_CACHE_CONTROL = 'private, no-cache';
/** `Cache-Control` of an account's own data (its usage, ledger and webhooks; the account pages): never stored. */
export const NO_STORE = 'no-store';
/** `Cache-Control` of an export file: its URL names one bundle's file, which never changes (private: a paid download). */
export const DOWNLOAD_CACHE_CONTROL = 'private, max-age=86400, immutable';
/** `Accept-Ranges` of an export file. */
export const DOWNLOAD_ACCEPT_RANGES = 'bytes';

/**
 * Headers on every response, whatever its route. An API answering JSON needs few of the browser
 * headers helmet sets (those guard rendered HTML): these are the OWASP REST Security Cheat Sheet's.
 * The HTML pages get helmet's whole set on top. Every metered call pays for each header it
 * carries, so the list is short.
 */
export const API_HEADERS: readonly (readonly [string, string])[] = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
  ['X-Frame-Options', 'DENY'],
];

/**
 * Headers a response may carry that the OpenAPI document leaves undeclared: HTTP's own framing,
 * content negotiation and connection headers (node and the compression middleware set them), and
 * the fixed security headers of `API_HEADERS`, the same on every response. They say nothing about
 * a call's result, and a generated client has no use for them. `Content-Length` is declared where
 * it means something (an export download, where it is the size of the range sent).
 */
export const TRANSPORT_HEADERS: readonly string[] = [
  'Content-Type',
  'Content-Length',
  'Content-Encoding',
  'Transfer-Encoding',
  'Vary',
  'Date',
  'Connection',
  'Keep-Alive',
  ...API_HEADERS.map(([name]) => name),
];

/** An OpenAPI 3.0 header object. */
export interface HeaderDefinition {
  /** The header's name on the wire. */
  name: HeaderName;
  description: string;
  schema: Record<string, unknown>;
}

const integer = (minimum: number) => ({ type: 'integer', minimum });

/**
 * Each declared header, by its name in `components.headers` (a header with two meanings, such as
 * `ETag` of a daily body and of an export file, has one entry per meaning).
 */
export const RESPONSE_HEADERS = {
  RequestId: {
    name: HEADER.requestId,
    description:
      'The id of this request, on every response (errors included). A charged call’s ledger entry (`GET /v1/usage/ledger`) carries the same id as `request_id`: quote it to support.',
    schema: { type: 'string', pattern: `^${REQUEST_ID_PREFIX}[A-Za-z0-9_-]{${Math.ceil((REQUEST_ID_BYTES * 4) / 3)}}$`, example: 'req_9c2LbYv0QmWx3kTz' },
  },
  CreditsRemaining: {
    name: HEADER.creditsRemaining,
    description:
      'Credits left to spend after this call: the allowance left this month plus prepaid pack credits, as a decimal integer (negative in overage), or `unlimited` on an unmetered plan. On every response to a request with a valid key, errors included (a refusal after the key was checked shows the balance it did not touch); not on a 401 or a revoked key’s 403.',
    schema: { type: 'string', pattern: '^(-?[0-9]+|unlimited)$', example: '24872' },
  },
  CreditsCost: {
    name: HEADER.creditsCost,
    description:
      'What this call cost, in credits (0 for a free call); on a dry run (`X-Dry-Run: true`, answered 204), what it would cost now. Sent on every answered call priced by the rate card.',
    schema: { type: 'string', pattern: '^[0-9]+$', example: '2' },
  },
  KeyBudgetRemaining: {
    name: HEADER.keyBudgetRemaining,
    description:
      'Credits this key may still spend after this call: the smaller of what is left of its daily and its monthly credit limit (UTC day and month). Only on a charged call’s answer, and only for a key that has a credit limit (set on the account page, with `scores keys limits` or `PATCH /v1/keys/{key_id}`); MCP results carry it as `_meta.key_budget_remaining`.',
    schema: { type: 'string', pattern: '^[0-9]+$', example: '750' },
  },
  RateLimit: {
    name: HEADER.rateLimit,
    description:
      'The account’s request-rate budget now (all its keys share one) (IETF draft-ietf-httpapi-ratelimit-headers): `r` requests left in the burst, `t` seconds until it is full again. On every response to a request with a valid key, except for a key without a rate limit.',
    schema: { type: 'string', pattern: '^"per-account";r=[0-9]+;t=[0-9]+$', example: '"per-account";r=19;t=1' },
  },
  RateLimitPolicy: {
    name: HEADER.rateLimitPolicy,
    description: 'The account’s request-rate policy: a burst of `q` requests, refilled over `w` seconds. Sent with `RateLimit`.',
    schema: { type: 'string', pattern: '^"per-account";q=[0-9]+;w=[0-9]+$', example: '"per-account";q=20;w=2' },
  },
  RetryAfter: {
    name: HEADER.retryAfter,
    description: 'Seconds to wait before the next request. Sent with a 429 `rate_limited` (never with `credits_exhausted`, which waiting does not cure).',
    schema: { ...integer(1), example: 1 },
  },
  WwwAuthenticate: {
    name: HEADER.wwwAuthenticate,
    description: 'How to authenticate: send your API key in the `X-API-Key` header (the `api_key` security scheme). On every 401.',
    schema: { type: 'string', enum: [API_KEY_CHALLENGE] },
  },
  Allow: {
    name: HEADER.allow,
    description: 'The methods this path answers, comma-separated.',
    schema: { type: 'string', pattern: '^[A-Z]+(, [A-Z]+)*$', example: 'GET' },
  },
  DailyETag: {
    name: HEADER.etag,
    description: 'A weak validator of the body (a hash of its JSON). Send it back in `If-None-Match`: while the body is the same, the answer is 304 without a body.',
    schema: { type: 'string', pattern: '^W/"[A-Za-z0-9_-]{27}"$', example: 'W/"q3bW0l6lHq8m8dkYcRk1Z0jv3nH"' },
  },
  DailyCacheControl: {
    name: HEADER.cacheControl,
    description: 'Keep the body, but check it with its ETag before each use: it changes at most once a day, with a new publication.',
    schema: { type: 'string', enum: [DAILY_CACHE_CONTROL] },
  },
  PrivateCacheControl: {
    name: HEADER.cacheControl,
    description: 'Your account’s own data (a webhook’s signing secret among it): no cache, the browser’s or one on the way, may store it.',
    schema: { type: 'string', enum: [NO_STORE] },
  },
  DownloadETag: {
    name: HEADER.etag,
    description: 'The file’s SHA-256 (its `sha256` in the listing), quoted. `If-None-Match` with it answers 304; `If-Range` with it makes a range request safe.',
    schema: { type: 'string', pattern: '^"[0-9a-f]{64}"$', example: '"fbaf877884d7861f0cb91255c52d8eb79aa4702a4e924c0fcb96eeb2c572b0ed"' },
  },
  DownloadCacheControl: {
    name: HEADER.cacheControl,
    description: 'The URL names one file of one bundle, which never changes: a private cache may keep it a day without asking again.',
    schema: { type: 'string', enum: [DOWNLOAD_CACHE_CONTROL] },
  },
  AcceptRanges: {
    name: HEADER.acceptRanges,
    description: 'Ranges in bytes are served: resume a download with `Range: bytes=<first byte>-`.',
    schema: { type: 'string', enum: [DOWNLOAD_ACCEPT_RANGES] },
  },
  ContentDisposition: {
    name: HEADER.contentDisposition,
    description: 'Save as the file’s name.',
    schema: { type: 'string', pattern: '^attachment; filename="[a-z0-9_.]+"$', example: 'attachment; filename="scores_history.csv.gz"' },
  },
  DownloadLength: {
    name: HEADER.contentLength,
    description: 'Bytes in this body: the whole file, or the range sent.',
    schema: { ...integer(0), example: 48213377 },
  },
  ContentRange: {
    name: HEADER.contentRange,
    description: 'The bytes sent and the file’s whole size: `bytes <first>-<last>/<size>`.',
    schema: { type: 'string', pattern: '^bytes [0-9]+-[0-9]+/[0-9]+$', example: 'bytes 1048576-48213376/48213377' },
  },
  UnsatisfiedRange: {
    name: HEADER.contentRange,
    description: 'The file’s whole size, for a range that starts beyond it: `bytes */<size>`.',
    schema: { type: 'string', pattern: '^bytes \\*/[0-9]+$', example: 'bytes */48213377' },
  },
} as const satisfies Record<string, HeaderDefinition>;

export type ResponseHeaderKey = keyof typeof RESPONSE_HEADERS;
