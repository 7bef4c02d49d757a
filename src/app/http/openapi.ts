import { ERROR_CODES, statusOf, titleOf, type ErrorCode } from '../../core/errors.js';
import { PROBLEM_JSON } from './problem.js';
import { PROBLEM_FIELDS, problemOf } from '../../web/problem.js';
import { DRY_RUN_HEADER, MAX_CREDITS_HEADER } from '../../web/call-budget.js';
import { HEADER, RESPONSE_HEADERS, TRANSPORT_HEADERS, type ResponseHeaderKey } from '../../web/response-headers.js';
import { PLANS, TIERS } from '../../domain/plans.js';
import { RATE_CARD, RATE_KEYS, describeCost, isRateKey, type RateKey } from '../../domain/rate-card.js';
import { LEDGER_EVENT_TYPES } from '../../domain/ledger/ledger.events.js';
import { DAILY_FREE_PATHS } from './fair-use.js';
import { isPrivatePath } from './private-responses.js';
import { DIRECTION_VALUES, DIVERGENCE_LIMIT } from '../../../queries/get-divergence/get-divergence.query.js';
import { MAX_WEBHOOK_URL_LENGTH } from '../../domain/webhooks/webhook-registry.decider.js';
import { WEBHOOK_URL_PATTERN } from '../../domain/webhooks/address-policy.js';
import { MAX_WEBHOOK_ID } from '../../web/webhook-id.js';
import { DELIVERY_ID, IDEMPOTENCY_KEY } from '../../../commands/manage-webhooks/resend-request.js';
import { EARNINGS_DAYS } from '../../../queries/get-earnings/get-earnings.query.js';
import { SCREENER_LIMIT, SCREENER_MIN_SCORE } from '../../../queries/get-screener/get-screener.query.js';
import { SIGNALS_LIMIT } from '../../../queries/get-signals/get-signals.query.js';
import { LEDGER_CURSOR, MONTH, USAGE_LEDGER_LIMIT } from '../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { THEME_SLUG } from '../../../queries/get-themes/get-themes.query.js';
import { DAY, KEY_PREFIX, REQUEST_ID, REQUEST_LOG_CURSOR, REQUEST_LOG_LIMIT, STATUS_CLASS } from '../../../queries/get-request-log/get-request-log.query.js';
import { INSTANT_BODY_SCHEMA, INSTANT_PARAM_SCHEMA } from '../../../queries/shared/instants.js';
import { MAX_TICKERS_PER_CALL, MAX_TICKER_LENGTH, SYMBOL } from '../../../queries/shared/tickers.js';

type Json = Record<string, unknown>;
interface OpenApiResponse {
  description?: string;
  content?: Record<string, { schema?: unknown; examples?: Json }>;
  headers?: Json;
}
interface OpenApiParameter {
  name: string;
  in: string;
  schema?: Json;
}
interface OpenApiOperation {
  description?: string;
  tags?: string[];
  parameters?: OpenApiParameter[];
  security?: Record<string, string[]>[];
  responses?: Record<string, OpenApiResponse>;
}
type Paths = Record<string, Record<string, OpenApiOperation>>;

const integer = (rule: { min: number; max: number; default?: number }): Json => ({
  type: 'integer',
  minimum: rule.min,
  maximum: rule.max,
  ...(rule.default === undefined ? {} : { default: rule.default }),
});
const DATE: Json = { type: 'string', format: 'date' };
const WEBHOOK_ID: Json = { type: 'integer', minimum: 1, maximum: MAX_WEBHOOK_ID };
const IDEMPOTENCY_KEY_SCHEMA: Json = { type: 'string', pattern: IDEMPOTENCY_KEY.source };
/**
 * A list sent as one comma-separated value (`tickers=AAPL,MSFT`): an array for a client
 * generator, the same text on the wire. `tickers[]=…` or a repeated `tickers` is refused (400).
 */
const commaList = (items: Json, maxItems: number): Json => ({ style: 'form', explode: false, schema: { type: 'array', items, minItems: 1, maxItems } });

/**
 * What each query parameter's value is. The controllers take these parameters as text and parse
 * them themselves (so that a malformed value is a 400 naming the parameter, and a value above its
 * maximum a 422, as docs/product.md says), so tsoa writes them as plain strings; a client generated from
 * the document should see integers, dates and lists. Ranges come from the same rules the controllers
 * apply. A value above `maximum` is a 422 `limit_exceeded`, anything else outside the schema a 400.
 * A value is a schema, or (with `style`) the parameter's fields.
 */
const PARAMETER_SCHEMAS: Record<string, Record<string, Json>> = {
  '/v1/screener': { limit: integer(SCREENER_LIMIT), min_score: integer(SCREENER_MIN_SCORE) },
  '/v1/signals': { limit: integer(SIGNALS_LIMIT) },
  '/v1/divergence': { limit: integer(DIVERGENCE_LIMIT), direction: { type: 'string', enum: [...DIRECTION_VALUES], description: 'case-insensitive' } },
  '/v1/earnings': { days: integer(EARNINGS_DAYS) },
  '/v1/usage/ledger': { limit: integer(USAGE_LEDGER_LIMIT), month: { type: 'string', pattern: MONTH.source }, cursor: { type: 'string', pattern: LEDGER_CURSOR.source } },
  '/v1/requests': {
    limit: integer(REQUEST_LOG_LIMIT),
    status: { type: 'string', pattern: STATUS_CLASS.source },
    operation: { type: 'string', enum: [...RATE_KEYS] },
    day: { type: 'string', format: 'date', pattern: DAY.source },
    request_id: { type: 'string', pattern: REQUEST_ID.source },
    key: { type: 'string', pattern: KEY_PREFIX.source },
    cursor: { type: 'string', pattern: REQUEST_LOG_CURSOR.source },
  },
  '/v1/coverage': { since: DATE },
  '/v1/divergence/events': { since: DATE },
  '/v1/scores/{ticker}/history': { start: DATE, end: DATE, as_known_at: INSTANT_PARAM_SCHEMA },
  '/v1/scores/history': {
    tickers: commaList({ type: 'string', pattern: SYMBOL.source, maxLength: MAX_TICKER_LENGTH }, MAX_TICKERS_PER_CALL),
    start: DATE,
    end: DATE,
    as_known_at: INSTANT_PARAM_SCHEMA,
    // The plain forms only: a `next_since` cursor is opaque and valid only as the service issued it,
    // and any form given here would admit forged ones it refuses (docs/api-contract.md).
    since: INSTANT_PARAM_SCHEMA,
  },
  '/v1/scores/social-heat/{ticker}': { start: DATE, end: DATE },
  // Path parameters: the controllers parse `slug` and `webhook_id` themselves too (a 400 naming them).
  '/v1/themes/{slug}': { slug: { type: 'string', pattern: THEME_SLUG.source } },
  '/v1/webhooks/{webhook_id}': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/test': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/enable': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/rotate-secret': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/deliveries': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/resend': { webhook_id: WEBHOOK_ID, delivery_id: { type: 'string', pattern: DELIVERY_ID.source }, 'Idempotency-Key': IDEMPOTENCY_KEY_SCHEMA },
  '/v1/webhooks/{webhook_id}/resend-failed': { webhook_id: WEBHOOK_ID, 'Idempotency-Key': IDEMPOTENCY_KEY_SCHEMA },
};

/**
 * The service's own text formats. A DTO property says `@format timestamp` (tsoa copies the word);
 * the document gives the pattern instead, as OpenAPI has no such format.
 */
const TEXT_FORMATS: Record<string, string> = {
  /** `restated_at`, `created_at`: not RFC 3339 (a space, no zone; UTC). */
  timestamp: '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$',
  /** An export's `generated_at`. */
  'timestamp-minutes': '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}$',
  month: MONTH.source,
};

/**
 * Rules tsoa cannot read from a TypeScript type, from the code that applies them: schema →
 * property → keywords added to its schema (closed sets, patterns, lengths).
 */
const SCHEMA_RULES: Record<string, Record<string, Json>> = {
  LedgerEntryResponse: { kind: { enum: [...LEDGER_EVENT_TYPES] } },
  RegisterWebhookRequest: { url: { pattern: WEBHOOK_URL_PATTERN, maxLength: MAX_WEBHOOK_URL_LENGTH } },
  // What parseSince reads (a string of any other form was a 400 the document did not foretell).
  ResendFailedRequest: { since: INSTANT_BODY_SCHEMA },
};

/**
 * Where an answer leads (OpenAPI links), so that a client generator, or a tester following links
 * (schemathesis's stateful phase), downloads a listed file with ids the service gave.
 */
const RESPONSE_LINKS: Record<string, Json> = {
  '/v1/bulk/exports': {
    DownloadFile: {
      operationId: 'downloadBulkExportFile',
      parameters: { bundle_id: '$response.body#/exports/0/bundle_id', name: '$response.body#/exports/0/name' },
      description: 'The first file of the latest bundle.',
    },
  },
};

/** The operations' tags, in the order a reader meets them. */
const TAGS: readonly { name: string; description: string }[] = [
  { name: 'Scores and history', description: 'A stock’s Main-Street and Wall-Street scores today, their daily history (point in time, incremental sync) and its live social heat.' },
  { name: 'Discovery', description: 'Whole-universe reads: the screener, divergence extremes, research signals, theme baskets, upcoming earnings, and the tickers your key can see.' },
  { name: 'Outcomes', description: 'What divergence extremes did next: closed events with their dated outcome, the ones still open, and the model portfolio built on them.' },
  { name: 'Delivery', description: 'The nightly Backtest Pack: gzipped CSV files of the whole history, listed and downloaded with the same key.' },
  { name: 'Webhooks', description: 'HTTPS callbacks for score moves and new divergence extremes, signed with a secret (see docs/webhooks.md).' },
  { name: 'Account', description: 'Your plan, balances, credit ledger and the rate card; the dataset’s field dictionary.' },
];

/** The code an error response means when its description names none. */
const DEFAULT_CODE: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'key_forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  422: 'limit_exceeded',
  431: 'headers_too_large',
};

/** Whether `word` is an error code answered with `status` (statusOf is undefined for any other word). */
const isCode = (word: string, status: number): word is ErrorCode => statusOf(word as ErrorCode) === status;

/**
 * The problems an error response's description names, each with its own text: "Revoked key
 * (key_forbidden) or plan below quant (tier)" names `key_forbidden` ("Revoked key") and `tier`
 * ("Plan below quant"). A description that names no code means its status's usual code, with the
 * whole description as the text.
 */
function problemsOf(status: number, description: string): { code: ErrorCode; detail: string }[] {
  const named: { code: ErrorCode; detail: string }[] = [];
  for (const m of description.matchAll(/(.*?)\s*\((\w+)\)/g)) {
    const [, text, word] = m as unknown as [string, string, string];
    if (!isCode(word, status)) continue;
    const detail = text.replace(/^[,;]?\s*(or\s+)?/, '').trim();
    named.push({ code: word, detail: detail.charAt(0).toUpperCase() + detail.slice(1) });
  }
  if (named.length) return named;
  const code = DEFAULT_CODE[status];
  return code ? [{ code, detail: description }] : [];
}

/** A priced read over its maximum (src/web/call-budget.ts). */
const OVER_MAX = 'the call would cost more than `X-Max-Credits` (cost_exceeds_max): nothing was charged, and a call priced per row stopped reading at the maximum';

/** The request header every read takes besides its own parameters: the most it may cost. */
const MAX_CREDITS_PARAMETER: Json = {
  name: MAX_CREDITS_HEADER,
  in: 'header',
  required: false,
  description:
    'The most this call may cost, in credits. A call that would cost more is refused with 403 `cost_exceeds_max` and charged nothing; a call priced per row stops reading once past the maximum, so a broad query with a small maximum reads almost nothing. To know the exact price first, send the same request with `X-Dry-Run: true` (`x-dry-run`).',
  schema: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
};

/**
 * The dry run, named at the root like `x-method-not-allowed`: every read with a rate card takes
 * the `X-Dry-Run` header and may answer 204. Declared on each operation, the 204 would make every
 * typed client's answer of every call "its body, or nothing" (openapi-fetch's `data` turns
 * optional), for a request header the call's own code chose to send; the SDKs' price methods
 * read it from here instead.
 */
function dryRunDeclaration(): Json {
  return {
    description:
      'Every operation with `x-rate-card` and method GET takes the request header below. `true`: the call is checked as it would be (key, plan, parameters, coverage, and the ledger’s decision on your credits) and answered 204 without a body, with `X-Credits-Cost` (what it would cost now) and `X-Credits-Remaining` (untouched), or with the refusal it would get. Nothing is run past those checks or charged; it counts against the request rate like any call. A dry run of a write is a 400. MCP tools take the same as the argument `dry_run`.',
    parameter: {
      name: DRY_RUN_HEADER,
      in: 'header',
      required: false,
      schema: { type: 'string', enum: ['true', 'false'] },
    },
    response: {
      description: 'A dry run that would be answered: nothing was run or charged.',
      // Written out, not as $refs: no linter follows a $ref inside an `x-` extension (see x-method-not-allowed).
      headers: Object.fromEntries(
        (['RequestId', 'CreditsCost', 'CreditsRemaining'] as const).map((k) => [RESPONSE_HEADERS[k].name, { description: RESPONSE_HEADERS[k].description, schema: RESPONSE_HEADERS[k].schema, required: true }]),
      ),
    },
    status: 204,
  };
}

/** Texts of statuses every operation can answer, whatever its controller declares. */
const UNKNOWN_QUERY = 'a query parameter this endpoint does not take';
const HEADERS_TOO_LARGE = 'Request line and headers over 16 KiB (headers_too_large), refused before the key is read';
const REQUEST_TIMEOUT = 'The request was not received in time: its headers within 10 s, its body at 1 KiB/s on average after its first 10 s, all of it within 60 s (the defaults); the connection is then closed (request_timeout)';
const INTERNAL = 'The service failed to answer (internal); the error was logged under the response’s X-Request-Id: quote it to support';

/**
 * The 429 of an authenticated operation: `rate_limited` on every one (the account's request rate,
 * shared by its keys, a key's requests in flight, or requests without a valid key from one
 * address; on a free read's JSON answer also the account's budget of free answers' bytes),
 * `credits_exhausted` where a call costs credits.
 */
function tooManyRequests(key: RateKey, freeAnswer: boolean): string {
  const bytes = freeAnswer ? ', over its budget of free answers’ bytes (with `bytes_per_second`; a 304 costs none)' : '';
  const rate = `Too many requests: over the account’s request rate (all its keys share it)${bytes}, more requests in flight than a key may have at once, or too many requests without a valid key from your address (rate_limited); wait \`Retry-After\` seconds`;
  if (RATE_CARD[key].credits === 0) return rate;
  const keyBudget = 'the call would take the key past its daily or monthly credit limit (key_budget_exhausted; `Retry-After` is the window’s reset)';
  return `Credits exhausted: the allowance and prepaid credits are gone and overage is off (credits_exhausted), ${keyBudget}, or ${rate.charAt(0).toLowerCase()}${rate.slice(1)}`;
}

/** Every keyed operation's 403 also names the key's own refusals: an expiry passed, a restriction (src/domain/accounts/key-limits.ts). */
function withKeyRefusals(response: OpenApiResponse): OpenApiResponse {
  const text = response.description ?? '';
  const more = [
    ...(text.includes('(key_expired)') ? [] : ['a key past its expiry (key_expired)']),
    ...(text.includes('(key_scope_forbidden)') ? [] : ['a key restricted from this call: read-only, or limited to other operations (key_scope_forbidden)']),
  ];
  return more.length ? { ...response, description: `${text}; or ${more.join(', or ')}` } : response;
}

/**
 * The headers of one response, as `$ref`s to `components.headers`. A header object's `required`
 * cannot stand beside a `$ref`, so a header that some responses always carry and others only
 * sometimes has two components: `CreditsRemaining` (required) and `CreditsRemainingOptional`.
 */
const headerRefs = (keys: readonly ResponseHeaderKey[], required: readonly ResponseHeaderKey[] = []): Json =>
  Object.fromEntries(keys.map((k) => [RESPONSE_HEADERS[k].name, { $ref: `#/components/headers/${required.includes(k) ? k : `${k}${OPTIONAL}`}` }]));
const OPTIONAL = 'Optional';

/** components.headers: each header the responses name, required or optional (see `headerRefs`). */
function headerComponents(paths: Json): Json {
  const used = new Set(JSON.stringify(paths).match(/#\/components\/headers\/\w+/g) ?? []);
  const out: Json = {};
  for (const [k, h] of Object.entries(RESPONSE_HEADERS)) {
    const header = { description: h.description, schema: h.schema };
    if (used.has(`#/components/headers/${k}`)) out[k] = { ...header, required: true };
    if (used.has(`#/components/headers/${k}${OPTIONAL}`)) out[`${k}${OPTIONAL}`] = header;
  }
  return out;
}

/** What an export download's answers carry besides the metering headers (commands/export-bundles/bulk-download.controller.ts sets them). */
const DOWNLOAD_PATH = '/v1/bulk/exports/{bundle_id}/{name}';
const DOWNLOAD_HEADERS: Record<string, readonly ResponseHeaderKey[]> = {
  '200': ['DownloadETag', 'AcceptRanges', 'DownloadCacheControl', 'ContentDisposition', 'DownloadLength'],
  '206': ['DownloadETag', 'AcceptRanges', 'DownloadCacheControl', 'ContentDisposition', 'DownloadLength', 'ContentRange'],
  '304': ['DownloadETag', 'AcceptRanges', 'DownloadCacheControl'],
  '416': ['UnsatisfiedRange'],
};
/** What a daily free body's 200 and 304 carry (fair-use.ts `dailyEtag`). */
const DAILY_HEADERS: readonly ResponseHeaderKey[] = ['DailyETag', 'DailyCacheControl'];

/**
 * The headers a response declares. Every response names its request. A request whose key was
 * read carries the balance and the rate budget (not a 401, and not the 431 node answers before
 * any handler); they are sure only on a success, as an error can come before the key is checked
 * (a revoked key, an unreadable path, the request rate of callers without a key).
 */
function responseHeaders(path: string, status: string, key: RateKey | undefined): Json {
  const code = Number(status);
  const keys: ResponseHeaderKey[] = ['RequestId'];
  const required: ResponseHeaderKey[] = ['RequestId'];
  if (key && code !== 401 && code !== 431) {
    keys.push('CreditsRemaining', 'RateLimit', 'RateLimitPolicy');
    if (code < 400) required.push('CreditsRemaining');
    if (code < 400) keys.push('CreditsCost');
    // A charged call's answer, to a key with credit limits.
    if (code < 300 && RATE_CARD[key].credits > 0) keys.push('KeyBudgetRemaining');
  }
  if (code === 401) {
    keys.push('WwwAuthenticate');
    required.push('WwwAuthenticate');
  }
  if (code === 429) {
    keys.push('RetryAfter');
    // Without a price, a 429 can only be `rate_limited`, which always says when to retry.
    if (key && RATE_CARD[key].credits === 0) required.push('RetryAfter');
  }
  // Set before the route runs (private-responses.ts): on all but the 431 node answers first, and
  // the 408 it may (headers that did not arrive in time).
  if (isPrivatePath(path) && code !== 431 && code !== 408) {
    keys.push('PrivateCacheControl');
    required.push('PrivateCacheControl');
  }
  const own = path === DOWNLOAD_PATH ? DOWNLOAD_HEADERS[status] : DAILY_FREE_PATHS.includes(path) && (code === 200 || code === 304) ? DAILY_HEADERS : undefined;
  if (own) {
    keys.push(...own);
    // A 206's Content-Range and every fixed header are always sent; so is a 416's Content-Range.
    required.push(...own);
  }
  return headerRefs(keys, required);
}

/**
 * An error response as problem+json, with one example per problem its description names, each
 * with the fields its code always carries (`PROBLEM_FIELDS`; `shown` gives an operation's own values).
 */
function problemResponse(status: number, response: OpenApiResponse, baseUrl: string, shown: Json = {}): OpenApiResponse {
  const description = response.description ?? '';
  const content = response.content ?? {};
  const schema = (content['application/json'] ?? Object.values(content)[0])?.schema ?? { $ref: '#/components/schemas/ProblemDetails' };
  const examples: Json = {};
  for (const p of problemsOf(status, description)) {
    const fields = Object.entries(PROBLEM_FIELDS[p.code]).filter(([, f]) => f.required);
    examples[p.code] = { summary: p.detail, value: problemOf(p.code, p.detail, baseUrl, Object.fromEntries(fields.map(([name, f]) => [name, name in shown ? shown[name] : f.example]))) };
  }
  return { ...response, content: { [PROBLEM_JSON]: { schema, examples } } };
}

/** `bad_request` → `BadRequestProblem`: the schema of one code's problems. */
const problemSchemaName = (code: ErrorCode): string => `${code.replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase())}Problem`;

/**
 * The problems, typed per code: `<Code>Problem` holds the standard fields (its own `code`,
 * `status` and `title`) and exactly the fields of `PROBLEM_FIELDS`, and `ProblemDetails`, the
 * schema every error response names, is their union told apart by `code`. `standard` is tsoa's
 * ProblemDetails (the interface of src/web/problem.ts), whose texts are kept.
 */
function problemSchemas(standard: Json): Record<string, Json> {
  const props = standard['properties'] as Record<string, Json>;
  const out: Record<string, Json> = {};
  for (const code of ERROR_CODES) {
    const fields = PROBLEM_FIELDS[code];
    out[problemSchemaName(code)] = {
      type: 'object',
      description: `A \`${code}\` problem (${statusOf(code)} ${titleOf(code)}); \`/docs/errors#${code}\` says what to do.`,
      required: ['type', 'title', 'status', 'detail', 'code', ...Object.keys(fields).filter((name) => fields[name]!.required)],
      additionalProperties: false,
      properties: {
        type: props['type'],
        title: { type: 'string', enum: [titleOf(code)] },
        status: { type: 'integer', enum: [statusOf(code)], description: props['status']?.['description'] },
        detail: props['detail'],
        code: { type: 'string', enum: [code], description: 'Stable machine-readable code; `/docs/errors#<code>` says what it means and what to do.' },
        ...Object.fromEntries(Object.entries(fields).map(([name, f]) => [name, f.schema])),
      },
    };
  }
  const refs = Object.fromEntries(ERROR_CODES.map((code) => [code, `#/components/schemas/${problemSchemaName(code)}`]));
  out['ProblemDetails'] = {
    description: `${(standard['description'] as string | undefined) ?? ''} One schema per \`code\`, with the fields that code carries.`,
    oneOf: Object.values(refs).map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'code', mapping: refs },
  };
  return out;
}

/** The operation's rate-card key: the scope tsoa's security hook reads (`@Security('api_key', [key])`). */
function rateKeyOf(op: OpenApiOperation): RateKey | undefined {
  const scope = op.security?.[0]?.['api_key']?.[0];
  if (scope === undefined) return undefined;
  if (!isRateKey(scope)) throw new Error(`security scope ${scope} is not a rate-card key`);
  return scope;
}

/**
 * The operation's responses: those its controller declares, and the statuses every operation can
 * answer (400, 408, 431, 500; 401, 403 and 429 with a key; 304 on the daily free bodies), each with its
 * headers.
 */
function completeResponses(path: string, method: string, op: OpenApiOperation, key: RateKey | undefined, baseUrl: string): Json {
  const declared: Record<string, OpenApiResponse> = { ...op.responses };
  const add = (status: string, description: string) => (declared[status] ??= { description });
  const bad = declared['400'];
  if (!bad) add('400', `${UNKNOWN_QUERY.charAt(0).toUpperCase()}${UNKNOWN_QUERY.slice(1)}`);
  else if (!/query parameter/i.test(bad.description ?? '')) declared['400'] = { ...bad, description: `${bad.description}; or ${UNKNOWN_QUERY}` };
  if (key) {
    add('401', 'Missing or unknown API key');
    add('403', 'Revoked key (key_forbidden)');
    // A free GET's JSON answer counts against the byte budget (fair-use.ts); a bundle file's download streams it, uncounted.
    const freeAnswer = method === 'get' && RATE_CARD[key].credits === 0 && path !== DOWNLOAD_PATH;
    declared['429'] = { description: tooManyRequests(key, freeAnswer) };
    // The call's own refusals first (a priced read's maximum among them), then the key's.
    const own = declared['403']!;
    declared['403'] = withKeyRefusals(method === 'get' && RATE_CARD[key].credits > 0 ? { ...own, description: `${own.description}; or ${OVER_MAX}` } : own);
  }
  add('408', REQUEST_TIMEOUT);
  add('431', HEADERS_TOO_LARGE);
  add('500', INTERNAL);
  if (method === 'get' && DAILY_FREE_PATHS.includes(path)) add('304', 'Not modified: the ETag sent in If-None-Match is the body’s; no body');
  const out: Json = {};
  for (const status of Object.keys(declared).sort()) {
    const code = Number(status);
    const response = code >= 400 ? problemResponse(code, declared[status]!, baseUrl, tierShown(key)) : binaryBodies(declared[status]!);
    out[status] = { ...response, headers: responseHeaders(path, status, key) };
  }
  return out;
}

/** A `tier` example's values for the operation: its minimum plan, asked for by the plan below it. */
function withLinks(path: string, method: string, responses: Json): Json {
  const links = method === 'get' ? RESPONSE_LINKS[path] : undefined;
  return links ? { ...responses, 200: { ...(responses['200'] as Json), links } } : responses;
}

function tierShown(key: RateKey | undefined): Json {
  const min = key ? RATE_CARD[key].min_tier : undefined;
  const below = min ? TIERS[PLANS[min].rank - 1] : undefined;
  return min && below ? { required_tier: min, tier: below } : {};
}

/** The rate-card line of an operation's description, and its `x-` extensions, from src/domain/rate-card.ts. */
function rateCardOf(key: RateKey): { text: string; extensions: Json } {
  const { credits, unit, min_tier } = RATE_CARD[key];
  return {
    text: `**Rate card** \`${key}\`: ${describeCost(key)}, ${min_tier === 'free' ? 'on every plan' : `on the ${min_tier} plan or higher`}.`,
    extensions: { 'x-rate-card': key, 'x-min-tier': min_tier, 'x-credits': { credits, unit } },
  };
}

/**
 * The document tsoa generated, completed where tsoa cannot know (the served document is
 * `servedOpenApi`'s):
 * - query parameters parsed by the controllers get their real types (`PARAMETER_SCHEMAS`);
 * - every status an operation can answer is declared, with the headers the service sends
 *   (`src/web/response-headers.ts`);
 * - error responses get their media type: tsoa describes every response as `application/json`,
 *   the service answers every error as `application/problem+json` (RFC 9457), with one example per
 *   problem the description names, built by the same `problemOf` the error handler uses (so the
 *   examples' `type`, `title`, `status` and `code` are what a client receives);
 * - a problem is typed per code (`problemSchemas`, from `PROBLEM_FIELDS`): `required_tier` of a
 *   `tier` problem is a tier, `maximum` of a `limit_exceeded` an integer;
 * - the security requirement carries no scopes (an `apiKey` scheme has none): the operation's
 *   rate-card key, price and minimum tier are `x-rate-card`, `x-credits`, `x-min-tier` and a line
 *   of its description, from the rate card;
 * - schemas: a `$ref` with a description beside it goes into an `allOf` (OpenAPI 3.0 ignores
 *   siblings of `$ref`), a nullable reference to an enum becomes the enum with null (to an object, gets `type: object`), the service's
 *   text formats become patterns, and the rules tsoa cannot read (closed sets, patterns) are added.
 */
export function completeOpenApi(spec: Json, baseUrl: string): Json {
  const source = spec['paths'] as Paths;
  for (const path of [...Object.keys(PARAMETER_SCHEMAS), ...Object.keys(RESPONSE_LINKS), ...DAILY_FREE_PATHS, DOWNLOAD_PATH]) {
    if (!source[path]) throw new Error(`openapi.ts names ${path}, which no controller serves`);
  }
  const paths: Json = {};
  for (const [path, item] of Object.entries(source)) {
    const ops: Json = {};
    for (const [method, op] of Object.entries(item)) {
      const key = rateKeyOf(op);
      const overrides = PARAMETER_SCHEMAS[path] ?? {};
      const parameters = op.parameters?.map((prm) => {
        const o = overrides[prm.name];
        if (!o || (prm.in !== 'query' && prm.in !== 'path' && prm.in !== 'header')) return prm;
        return 'style' in o ? { ...prm, ...o } : { ...prm, schema: o };
      });
      const card = key ? rateCardOf(key) : undefined;
      const budget = key && method === 'get' ? [MAX_CREDITS_PARAMETER] : [];
      ops[method] = {
        ...op,
        ...(card ? { description: [op.description, card.text].filter(Boolean).join('\n\n'), security: [{ api_key: [] }], ...card.extensions } : {}),
        ...(parameters || budget.length ? { parameters: [...(parameters ?? []), ...budget] } : {}),
        responses: withLinks(path, method, completeResponses(path, method, op, key, baseUrl)),
      };
    }
    paths[path] = ops;
  }
  const components = spec['components'] as Json;
  // What every path answers to a method it does not declare: no operation's, so it is named at the
  // root. Written out whole rather than as components.responses: no linter follows a $ref inside an
  // `x-` extension, so Redocly would call the component (and its Allow header) unused.
  const methodNotAllowed = problemResponse(
    405,
    {
      description: 'A method this path does not answer (HEAD included: it would be charged for data it does not deliver). `Allow` lists the methods it answers.',
      content: { [PROBLEM_JSON]: { schema: { $ref: '#/components/schemas/ProblemDetails' } } },
      headers: {
        [HEADER.requestId]: { description: RESPONSE_HEADERS.RequestId.description, schema: RESPONSE_HEADERS.RequestId.schema, required: true },
        [HEADER.allow]: { description: RESPONSE_HEADERS.Allow.description, schema: RESPONSE_HEADERS.Allow.schema, required: true },
      },
    },
    baseUrl,
  );
  const dryRun = dryRunDeclaration();
  return {
    ...spec,
    tags: TAGS,
    paths,
    'x-method-not-allowed': methodNotAllowed,
    'x-dry-run': dryRun,
    components: {
      ...components,
      schemas: usedSchemas(completeWithProblems(components['schemas'] as Record<string, Json>), [paths, methodNotAllowed]),
      headers: headerComponents(paths),
    },
  };
}

/**
 * The document `/openapi.json` serves: `completeOpenApi`'s, with the licence, the server and an
 * introduction to the contract (the headers, the statuses and the `x-` extensions).
 */
export function servedOpenApi(spec: Json, baseUrl: string): Json {
  const info = spec['info'] as { description?: string };
  return {
    ...completeOpenApi(spec, baseUrl),
    info: {
      ...info,
      description: `${info.description ?? ''}\n\n${CONTRACT}`,
      license: { name: 'Licence terms by plan tier', url: `${baseUrl}/license` },
    },
    servers: [{ url: baseUrl }],
  };
}

const CONTRACT = [
  '## The contract',
  'Send your key in `X-API-Key`. Every answer names its request in `X-Request-Id`; a call with a valid key also says your balance in `X-Credits-Remaining` and your request-rate budget in `RateLimit` and `RateLimit-Policy`, and a charged call of a key with a credit limit what the key may still spend in `X-Key-Budget-Remaining`. Each operation declares the headers it sends and every status it can answer, and its price and minimum plan as `x-rate-card` (the key `GET /v1/usage` and the ledger use), `x-credits` and `x-min-tier`.',
  `Errors are \`application/problem+json\` (RFC 9457) with a stable \`code\` (one of ${ERROR_CODES.map((c) => `\`${c}\``).join(', ')}); \`/docs/errors\` says what each means. Each code's problems carry their own fields, typed in its schema (\`TierProblem\` has \`required_tier\`, \`LimitExceededProblem\` \`maximum\`, …; \`ProblemDetails\` is their union, told apart by \`code\`). Statuses every operation can answer: 400 for a query parameter it does not take; 401, 403 (\`key_forbidden\`; \`key_expired\` and \`key_scope_forbidden\` for a key with an expiry or a restriction) and 429 (\`rate_limited\`, with \`Retry-After\`; \`credits_exhausted\` and \`key_budget_exhausted\`, with \`Retry-After\`, where a call costs credits); 408 \`request_timeout\` for a request not received in time (the connection is then closed); 431 for a request line and headers over 16 KiB; 500 \`internal\` when the service fails.`,
  'Two answers belong to no operation. A method a path does not declare (HEAD included) is 405 `method_not_allowed` with `Allow` listing the methods it answers, described at the root of the document as `x-method-not-allowed`. A path spelt otherwise than here (another case, a trailing slash) is 404 `not_found`.',
  'Budgets. Every read takes `X-Max-Credits`, the most it may cost (above it: 403 `cost_exceeds_max`, nothing charged), and `X-Dry-Run: true`, which prices it without running or charging it: 204 with `X-Credits-Cost`, or the refusal the call would get. The dry run is described once, at the root, as `x-dry-run`.',
  `Headers left undeclared, as they say nothing about a call's result: ${TRANSPORT_HEADERS.map((h) => `\`${h}\``).join(', ')} (HTTP's framing, content negotiation and connection headers, and the same security headers on every response).`,
].join('\n\n');

/** components.schemas as the served document has them (see `completeOpenApi`). */
function completeSchemas(schemas: Record<string, Json>): Record<string, Json> {
  const fix = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(fix);
    if (!node || typeof node !== 'object') return node;
    const { $ref, allOf, ...rest } = node as Json;
    const own = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, k === 'example' || k === 'enum' ? v : fix(v)]));
    if (typeof own['format'] === 'string' && TEXT_FORMATS[own['format']]) {
      own['pattern'] = TEXT_FORMATS[own['format']];
      delete own['format'];
    }
    const single = typeof $ref === 'string' ? $ref : Array.isArray(allOf) && allOf.length === 1 ? ((allOf[0] as Json)['$ref'] as string | undefined) : undefined;
    if (single === undefined) return allOf === undefined ? own : { ...own, allOf: fix(allOf) };
    const target = schemas[single.replace('#/components/schemas/', '')];
    // OpenAPI 3.0 reads `nullable` only beside `type`: a nullable enum is the enum, with null.
    if (own['nullable'] === true && target && Array.isArray(target['enum'])) return { ...target, ...own, enum: [...(target['enum'] as unknown[]), null] };
    // ...and a nullable object is `type: object` beside the reference.
    if (own['nullable'] === true && target?.['type'] === 'object') return { type: 'object', allOf: [{ $ref: single }], ...own };
    return Object.keys(own).length === 0 ? { $ref: single } : { allOf: [{ $ref: single }], ...own };
  };
  const out: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    const fixed = fix(schema) as Json;
    for (const [prop, rules] of Object.entries(SCHEMA_RULES[name] ?? {})) {
      const props = fixed['properties'] as Record<string, Json> | undefined;
      if (!props?.[prop]) throw new Error(`openapi.ts names ${name}.${prop}, which no schema has`);
      props[prop] = { ...props[prop], ...rules };
    }
    out[name] = fixed;
  }
  return out;
}

/** `completeSchemas`, with `ProblemDetails` typed per code (`problemSchemas`). */
function completeWithProblems(schemas: Record<string, Json>): Record<string, Json> {
  const out = completeSchemas(schemas);
  if (!out['ProblemDetails']) throw new Error('openapi.ts types ProblemDetails, which no controller declares');
  return { ...out, ...problemSchemas(out['ProblemDetails']) };
}

/** The schemas something still refers to: an enum inlined into its only (nullable) use is dropped. */
function usedSchemas(schemas: Record<string, Json>, roots: unknown[]): Record<string, Json> {
  const refsOf = (node: unknown) => new Set([...JSON.stringify(node).matchAll(/"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]!));
  const used = new Set<string>();
  let next = refsOf(roots);
  while (next.size) {
    for (const n of next) used.add(n);
    next = new Set([...refsOf([...next].map((n) => schemas[n]))].filter((n) => !used.has(n)));
  }
  return Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)));
}

/**
 * tsoa describes a streamed body (an export file) as a base64 string (`format: byte`); it is sent
 * as raw bytes (`format: binary`).
 */
function binaryBodies(response: OpenApiResponse): OpenApiResponse {
  if (!response.content) return response;
  const content: NonNullable<OpenApiResponse['content']> = {};
  for (const [type, media] of Object.entries(response.content)) {
    const schema = media.schema as { type?: string; format?: string } | undefined;
    content[type] = !type.endsWith('json') && schema?.type === 'string' && schema.format === 'byte' ? { ...media, schema: { type: 'string', format: 'binary' } } : media;
  }
  return { ...response, content };
}

/**
 * The methods each route declares, by express route path (`/v1/webhooks/:webhook_id` → DELETE),
 * upper case: what the app's method guard answers 405 against.
 */
export function methodsByRoute(spec: Json): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const [path, item] of Object.entries(spec['paths'] as Paths)) {
    out.set(expressPath(path), Object.keys(item).map((m) => m.toUpperCase()));
  }
  return out;
}

const expressPath = (path: string): string => path.replace(/\{([^}]+)\}/g, ':$1');

/**
 * The query parameters each route declares, by express route path (`/v1/scores/:ticker`): what
 * `rejectUnknownQuery` checks a request against.
 */
export function queryParamsByRoute(spec: Json): Map<string, ReadonlySet<string>> {
  const out = new Map<string, ReadonlySet<string>>();
  for (const [path, item] of Object.entries(spec['paths'] as Paths)) {
    const names = new Set<string>();
    for (const op of Object.values(item)) for (const p of op.parameters ?? []) if (p.in === 'query') names.add(p.name);
    out.set(expressPath(path), names);
  }
  return out;
}
