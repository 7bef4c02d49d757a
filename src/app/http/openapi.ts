import { statusOf, type ErrorCode } from '../../core/errors.js';
import { PROBLEM_JSON } from './problem.js';
import { problemOf } from '../../core/problem.js';
import { DIVERGENCE_LIMIT } from '../../../queries/get-divergence/get-divergence.query.js';
import { EARNINGS_DAYS } from '../../../queries/get-earnings/get-earnings.query.js';
import { SCREENER_LIMIT, SCREENER_MIN_SCORE } from '../../../queries/get-screener/get-screener.query.js';
import { SIGNALS_LIMIT } from '../../../queries/get-signals/get-signals.query.js';
import { USAGE_LEDGER_LIMIT } from '../../../queries/get-usage-ledger/get-usage-ledger.query.js';

type Json = Record<string, unknown>;
interface OpenApiResponse {
  description?: string;
  content?: Record<string, { schema?: unknown }>;
}
interface OpenApiParameter {
  name: string;
  in: string;
  schema?: Json;
}
interface OpenApiOperation {
  parameters?: OpenApiParameter[];
  responses?: Record<string, OpenApiResponse>;
}

const integer = (rule: { min: number; max: number; default?: number }): Json => ({
  type: 'integer',
  minimum: rule.min,
  maximum: rule.max,
  ...(rule.default === undefined ? {} : { default: rule.default }),
});
const DATE: Json = { type: 'string', format: 'date' };
const WEBHOOK_ID: Json = { type: 'integer', minimum: 1 };

/**
 * What each query parameter's value is. The controllers take these parameters as text and parse
 * them themselves (so that a malformed value is a 400 naming the parameter, and a value above its
 * maximum a 422, as docs/product.md says), so tsoa writes them as plain strings; a client generated from
 * the document should see integers and dates. Ranges come from the same rules the controllers
 * apply. A value above `maximum` is a 422 `limit_exceeded`, anything else outside the schema a 400.
 */
const PARAMETER_SCHEMAS: Record<string, Record<string, Json>> = {
  '/v1/screener': { limit: integer(SCREENER_LIMIT), min_score: integer(SCREENER_MIN_SCORE) },
  '/v1/signals': { limit: integer(SIGNALS_LIMIT) },
  '/v1/divergence': { limit: integer(DIVERGENCE_LIMIT), direction: { type: 'string', enum: ['bull', 'bear'], description: 'case-insensitive' } },
  '/v1/earnings': { days: integer(EARNINGS_DAYS) },
  '/v1/usage/ledger': {
    limit: integer(USAGE_LEDGER_LIMIT),
    month: { type: 'string', pattern: '^[0-9]{4}-[0-9]{2}$' },
  },
  '/v1/coverage': { since: DATE },
  '/v1/divergence/events': { since: DATE },
  '/v1/scores/{ticker}/history': { start: DATE, end: DATE, as_known_at: { type: 'string', format: 'date-time' } },
  '/v1/scores/history': { start: DATE, end: DATE, as_known_at: { type: 'string', format: 'date-time' } },
  '/v1/scores/social-heat/{ticker}': { start: DATE, end: DATE },
  // Path parameters: the controllers parse `webhook_id` themselves too (a 400 naming it).
  '/v1/webhooks/{webhook_id}': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/test': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/enable': { webhook_id: WEBHOOK_ID },
  '/v1/webhooks/{webhook_id}/deliveries': { webhook_id: WEBHOOK_ID },
};

/** The code an error response means when its description names none. */
const DEFAULT_CODE: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'key_forbidden',
  404: 'not_found',
  422: 'limit_exceeded',
  429: 'credits_exhausted',
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
    const detail = text.replace(/^(,\s*|\s*or\s+)/, '').trim();
    named.push({ code: word, detail: detail.charAt(0).toUpperCase() + detail.slice(1) });
  }
  if (named.length) return named;
  const code = DEFAULT_CODE[status];
  return code ? [{ code, detail: description }] : [];
}

/**
 * The document tsoa generated, completed where tsoa cannot know: query parameters parsed by the
 * controllers get their real types (`PARAMETER_SCHEMAS`), and error responses their media type.
 * tsoa describes every response as `application/json`. The service answers every error as
 * `application/problem+json` (RFC 9457): this gives each error response that media type, with one
 * example per problem its description names, built by the same `problemOf` the error handler
 * uses (so the examples' `type`, `title`, `status` and `code` are what a client receives).
 */
export function completeOpenApi(spec: Json, baseUrl: string): Json {
  const paths: Json = {};
  for (const [path, item] of Object.entries(spec['paths'] as Record<string, Record<string, OpenApiOperation>>)) {
    const ops: Json = {};
    for (const [method, op] of Object.entries(item)) {
      const responses: Json = {};
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const code = Number(status);
        if (!(code >= 400)) {
          responses[status] = binaryBodies(response);
          continue;
        }
        const description = response.description ?? '';
        const content = response.content ?? {};
        const schema = (content['application/json'] ?? Object.values(content)[0])?.schema ?? { $ref: '#/components/schemas/ProblemDetails' };
        const examples: Json = {};
        for (const p of problemsOf(code, description)) {
          examples[p.code] = { summary: p.detail, value: problemOf(p.code, p.detail, baseUrl) };
        }
        responses[status] = { ...response, content: { [PROBLEM_JSON]: { schema, examples } } };
      }
      const schemas = PARAMETER_SCHEMAS[path] ?? {};
      const parameters = op.parameters?.map((prm) => ((prm.in === 'query' || prm.in === 'path') && schemas[prm.name] ? { ...prm, schema: schemas[prm.name] } : prm));
      ops[method] = { ...op, ...(parameters ? { parameters } : {}), responses };
    }
    paths[path] = ops;
  }
  return { ...spec, paths };
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
  for (const [path, item] of Object.entries(spec['paths'] as Record<string, Record<string, OpenApiOperation>>)) {
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
  for (const [path, item] of Object.entries(spec['paths'] as Record<string, Record<string, OpenApiOperation>>)) {
    const names = new Set<string>();
    for (const op of Object.values(item)) for (const p of op.parameters ?? []) if (p.in === 'query') names.add(p.name);
    out.set(expressPath(path), names);
  }
  return out;
}
