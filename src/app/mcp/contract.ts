import { badRequest } from '../../core/errors.js';
import { RATE_CARD, type RateKey } from '../../domain/rate-card.js';
import { completeOpenApi } from '../http/openapi.js';
import { DRY_RUN_ARGUMENT, MAX_CREDITS_ARGUMENT } from '../../web/call-budget.js';

type Json = Record<string, unknown>;

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Json;
  style?: string;
  explode?: boolean;
}

/**
 * What a tool takes and answers, read from its REST twin's operation in the OpenAPI document: the
 * one source of both faces' parameters (tsoa's, completed by src/app/http/openapi.ts from the
 * controllers' own rules) and responses.
 */
export interface ToolContract {
  /** The twin's path and query parameters as JSON Schema properties, and `dry_run` and `max_credits` (REST's headers); no other argument is taken. */
  inputSchema: { type: 'object'; properties: Record<string, Json>; required?: string[]; additionalProperties: false };
  /** The twin's 200 body, its problem details (a tool error's structuredContent) or a dry run's price, with the schemas they use. */
  outputSchema: { type: 'object'; anyOf: Json[]; $defs: Record<string, Json> };
  /** The argument names, and those that are lists sent as one comma-separated value (`tickers`). */
  args: readonly string[];
  required: readonly string[];
  lists: ReadonlySet<string>;
}

/**
 * Keywords of OpenAPI 3.0's schema object that JSON Schema does not have, or formats only OpenAPI
 * defines (a validator would refuse the schema or reject every number): dropped.
 */
const OPENAPI_ONLY = new Set(['nullable', 'example', 'discriminator', 'xml', 'externalDocs', 'deprecated']);
const OPENAPI_FORMATS = new Set(['int32', 'int64', 'float', 'double', 'byte', 'binary', 'password']);

/**
 * An OpenAPI 3.0 schema as JSON Schema (valid for draft-07 and 2020-12 validators alike):
 * `nullable` becomes a `null` type (or an `anyOf` with null beside a reference), component
 * references point into `$defs`, OpenAPI-only keywords and number formats go.
 */
export function jsonSchemaOf(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchemaOf);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (OPENAPI_ONLY.has(k) || (k === 'format' && OPENAPI_FORMATS.has(String(v)))) continue;
    if (k === '$ref' && typeof v === 'string') out[k] = v.replace('#/components/schemas/', '#/$defs/');
    else out[k] = k === 'enum' || k === 'default' || k === 'required' ? v : jsonSchemaOf(v);
  }
  if ((node as Json)['nullable'] !== true) return out;
  if (typeof out['type'] === 'string') {
    return { ...out, type: [out['type'], 'null'], ...(Array.isArray(out['enum']) ? { enum: [...(out['enum'] as unknown[]), null] } : {}) };
  }
  return { anyOf: [out, { type: 'null' }] };
}

/** The component schemas `root` refers to, directly or through each other, as JSON Schema. */
function defsOf(root: unknown, schemas: Record<string, Json>): Record<string, Json> {
  const defs: Record<string, Json> = {};
  const visit = (node: unknown) => {
    for (const [, name] of JSON.stringify(node).matchAll(/"#\/\$defs\/(\w+)"/g)) {
      if (defs[name!]) continue;
      const schema = schemas[name!];
      if (!schema) throw new Error(`the OpenAPI document has no schema ${name}`);
      defs[name!] = jsonSchemaOf(schema) as Json;
      visit(defs[name!]);
    }
  };
  visit(root);
  return defs;
}

/**
 * The arguments every tool takes besides its twin's parameters: REST's `X-Dry-Run` and
 * `X-Max-Credits` headers (src/web/call-budget.ts reads both faces' values).
 */
const BUDGET_ARGUMENTS: Record<string, Json> = {
  [DRY_RUN_ARGUMENT]: {
    type: ['boolean', 'null'],
    description: 'true: answer only what this call would cost now (and the refusal it would get), without running or charging it. null = absent.',
  },
  [MAX_CREDITS_ARGUMENT]: {
    type: ['integer', 'null'],
    minimum: 0,
    description:
      'The most this call may cost, in credits: a call that would cost more is refused (cost_exceeds_max) and charges nothing; one priced per row stops reading at the maximum. null = absent.',
  },
};

/** A dry run's result (`DryRunResult`), the third shape of every tool's result. */
const DRY_RUN_RESULT: Json = {
  type: 'object',
  description: 'A dry run: what the call would cost now. Nothing was charged.',
  properties: {
    dry_run: { type: 'boolean', enum: [true] },
    cost: { type: 'integer', minimum: 0, description: 'Credits the call would cost now.' },
    credits_remaining: { type: ['integer', 'null'], description: 'Your balance now (unchanged); null when unmetered.' },
  },
  required: ['dry_run', 'cost', 'credits_remaining'],
  additionalProperties: false,
};

/** An argument's schema: the parameter's (a list as its array), described by the parameter, null allowed where the tool says. */
function argumentSchema(p: Parameter, nullable: boolean): Json {
  const schema = jsonSchemaOf({ ...(p.schema ?? { type: 'string' }), ...(nullable ? { nullable: true } : {}) }) as Json;
  const description = p.description ?? (schema['description'] as string | undefined);
  return { ...schema, ...(description ? { description: `${description.replace(/\s+/g, ' ').trim()}${nullable ? ' null = absent.' : ''}` } : {}) };
}

/**
 * The contract of the tool that mirrors `key` (its rate card's first GET route), from the
 * completed OpenAPI document. `nullable`: arguments that also take JSON null (as absent).
 */
export function contractOf(doc: Json, key: RateKey, nullable: readonly string[] = []): ToolContract {
  const route = RATE_CARD[key].routes.find((r) => r.method === 'GET');
  const op = ((doc['paths'] as Record<string, Record<string, Json>>)[route?.path ?? ''] ?? {})['get'];
  if (!route || !op) throw new Error(`the OpenAPI document has no GET ${route?.path ?? key} for its tool`);
  const params = ((op['parameters'] as Parameter[] | undefined) ?? []).filter((p) => p.in === 'path' || p.in === 'query');
  for (const n of nullable) if (!params.some((p) => p.name === n)) throw new Error(`GET ${route.path} has no parameter ${n}`);
  const properties = { ...Object.fromEntries(params.map((p) => [p.name, argumentSchema(p, nullable.includes(p.name))])), ...BUDGET_ARGUMENTS };
  const required = params.filter((p) => p.required).map((p) => p.name);
  const responses = op['responses'] as Record<string, { content?: Record<string, { schema?: Json }> }>;
  const body = responses['200']?.content?.['application/json']?.schema;
  const problem = Object.entries(responses).find(([s]) => Number(s) >= 400)?.[1].content?.['application/problem+json']?.schema;
  if (!body || !problem) throw new Error(`GET ${route.path} declares no JSON 200 body or no problem response`);
  const anyOf = [jsonSchemaOf(body), jsonSchemaOf(problem), DRY_RUN_RESULT] as Json[];
  const schemas = (doc['components'] as { schemas: Record<string, Json> }).schemas;
  return {
    inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false },
    outputSchema: { type: 'object', anyOf, $defs: defsOf(anyOf, schemas) },
    args: params.map((p) => p.name),
    required,
    lists: new Set(params.filter((p) => p.schema?.['type'] === 'array').map((p) => p.name)),
  };
}

/** The completed document of tsoa's output, as the MCP server reads it (the same `completeOpenApi` as /openapi.json; examples need no base URL here). */
export function toolDocument(spec: Json): Json {
  return completeOpenApi(spec, '');
}

/**
 * A tool argument as REST receives it: the text a client would put in the URL for it. A string is
 * itself, a number or boolean as written (1.5 → "1.5"), null → "null" (as `?direction=null`), an
 * array or object its JSON; absent stays absent.
 */
export function asQuery(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * A call's arguments as its REST twin's query: each value in query-string form (a list argument's
 * array as one comma-separated value, `["AAPL","MSFT"]` → `AAPL,MSFT`), judged afterwards by the
 * twin's own parser, so a malformed value gets REST's refusal (400 naming it, 422 above a maximum).
 * What REST cannot receive is refused here with REST's 400 `bad_request`: an argument the tool
 * does not take (REST's unknown query parameter) and a missing required one (a path without its
 * segment).
 */
export function queryOf(tool: string, contract: ToolContract, args: Record<string, unknown> | undefined): Record<string, string | undefined> {
  const given = args ?? {};
  const unknown = Object.keys(given).filter((k) => !contract.args.includes(k));
  if (unknown.length) {
    const takes = contract.args.length ? `it takes ${contract.args.join(', ')}` : 'it takes none';
    throw badRequest(`unknown argument${unknown.length === 1 ? '' : 's'} ${unknown.map((n) => JSON.stringify(n)).join(', ')} of ${tool}: ${takes}`, {
      errors: unknown.map((parameter) => ({ parameter, message: 'is not an argument of this tool' })),
    });
  }
  const missing = contract.required.filter((k) => given[k] === undefined);
  if (missing.length) {
    throw badRequest(`${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required`, {
      errors: missing.map((parameter) => ({ parameter, message: 'is required' })),
    });
  }
  const query: Record<string, string | undefined> = {};
  for (const name of contract.args) {
    const v = given[name];
    query[name] = contract.lists.has(name) && Array.isArray(v) ? v.map((x) => asQuery(x) ?? '').join(',') : asQuery(v);
  }
  return query;
}
