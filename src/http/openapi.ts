import { statusOf, type ErrorCode } from '../core/errors.js';
import { problemOf } from './problem.js';

type Json = Record<string, unknown>;
interface OpenApiResponse {
  description?: string;
  content?: Record<string, { schema?: unknown }>;
}
interface OpenApiOperation {
  responses?: Record<string, OpenApiResponse>;
}

export const PROBLEM_JSON = 'application/problem+json';

/** The code an error response means when its description names none. */
const DEFAULT_CODE: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'key_forbidden',
  404: 'not_found',
  409: 'conflict',
  422: 'limit_exceeded',
  429: 'credits_exhausted',
  500: 'internal',
};

const isCode = (word: string, status: number): word is ErrorCode => {
  try {
    return statusOf(word as ErrorCode) === status;
  } catch {
    return false;
  }
};

/**
 * The problems an error response's description names, each with its own text: "Revoked key
 * (key_forbidden) or plan below quant (tier)" names `key_forbidden` ("Revoked key") and `tier`
 * ("Plan below quant"). A description that names no code means its status's usual code, with the
 * whole description as the text.
 */
export function problemsOf(status: number, description: string): { code: ErrorCode; detail: string }[] {
  const named: { code: ErrorCode; detail: string }[] = [];
  let rest = description;
  for (const m of description.matchAll(/(.*?)\s*\((\w+)\)/g)) {
    const [whole, text, word] = m as unknown as [string, string, string];
    if (!isCode(word, status)) continue;
    const detail = text.replace(/^(,\s*|\s*or\s+)/, '').trim();
    named.push({ code: word, detail: detail.charAt(0).toUpperCase() + detail.slice(1) });
    rest = rest.replace(whole, '');
  }
  if (named.length) return named;
  const code = DEFAULT_CODE[status];
  return code ? [{ code, detail: description }] : [];
}

/**
 * tsoa describes every response as `application/json`. The service answers every error as
 * `application/problem+json` (RFC 9457): this gives each error response that media type, with one
 * example per problem its description names, built by the same `problemOf` the error handler
 * uses (so the examples' `type`, `title`, `status` and `code` are what a client receives).
 */
export function withProblemResponses(spec: Json, baseUrl: string): Json {
  const paths: Json = {};
  for (const [path, item] of Object.entries(spec['paths'] as Record<string, Record<string, OpenApiOperation>>)) {
    const ops: Json = {};
    for (const [method, op] of Object.entries(item)) {
      const responses: Json = {};
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const code = Number(status);
        if (!(code >= 400)) {
          responses[status] = response;
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
      ops[method] = { ...op, responses };
    }
    paths[path] = ops;
  }
  return { ...spec, paths };
}
