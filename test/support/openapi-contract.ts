import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: under ESM its default export is the module object on some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

type Json = Record<string, unknown>;

interface HeaderObject {
  required?: boolean;
  schema?: Json;
  $ref?: string;
}

interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema?: Json }>;
  headers?: Record<string, HeaderObject>;
}

interface OperationObject {
  responses: Record<string, ResponseObject>;
}

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, Json>; headers?: Record<string, HeaderObject>; responses?: Record<string, ResponseObject> };
  'x-method-not-allowed'?: ResponseObject;
}

/** One operation of the document: `GET /v1/scores/{ticker}`. */
export interface Operation {
  id: string;
  method: string;
  path: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every operation of the document, in its order (paths × methods). */
export function operationsOf(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => METHODS.includes(m))
      .map((m) => ({ id: `${m.toUpperCase()} ${path}`, method: m.toUpperCase(), path })),
  );
}

/** A response as it came off the wire: header names in lower case, the body decoded of its Content-Encoding. */
export interface ObservedResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export type ViolationKind = 'status' | 'media type' | 'header' | 'schema';

export interface Violation {
  kind: ViolationKind;
  operation: string;
  status: number;
  message: string;
}

/** The document's own address for ajv: its local `#/components/...` references resolve under it. */
const DOCUMENT_ID = 'https://contract.test/openapi.json';

/**
 * An OpenAPI 3.0 schema as JSON Schema for ajv: a `nullable: true` without a `type` (beside a
 * `$ref` or an `allOf`) becomes `anyOf` with null (ajv reads `nullable` only next to `type`),
 * draft-04 boolean `exclusiveMinimum` / `exclusiveMaximum` become numbers, and local references
 * point into the document added under DOCUMENT_ID.
 */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${DOCUMENT_ID}${v}` : toJsonSchema(v);
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof out[flag] !== 'boolean') continue;
    if (out[flag] && typeof out[bound] === 'number') {
      out[flag] = out[bound];
      delete out[bound];
    } else delete out[flag];
  }
  if (out['nullable'] === true && out['type'] === undefined) {
    const { nullable: _, ...rest } = out;
    return { anyOf: [rest, { type: 'null' }] };
  }
  return out;
}

const essence = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();

function mediaMatches(declared: string, actual: string): boolean {
  const d = declared.toLowerCase();
  if (d === actual || d === '*/*') return true;
  return d.endsWith('/*') && actual.startsWith(d.slice(0, -1));
}

const describeErrors = (errors: ErrorObject[] | null | undefined) =>
  (errors ?? []).map((e) => `${e.instancePath.replace(/\/\d+(?=\/|$)/g, '/*') || '(root)'} ${e.message ?? e.keyword}${e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})` : ''}`);

/**
 * Checks observed responses against an OpenAPI 3.0 document: the status is declared for the
 * operation (or `default`), the media type is one the response declares (none when it declares no
 * content), every header is declared on the response or is transport, every `required` header is
 * there, header values and JSON bodies validate against their schemas (ajv).
 */
export class ContractChecker {
  private readonly ajv: Ajv;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly transport: ReadonlySet<string>;
  /** Formats the document uses that ajv-formats does not know (ajv ignores them). */
  readonly unknownFormats = new Set<string>();

  constructor(
    private readonly doc: OpenApiDocument,
    transportHeaders: readonly string[],
  ) {
    this.transport = new Set(transportHeaders.map((h) => h.toLowerCase()));
    // A format of the document's own (OpenAPI allows any) is checked by its type and pattern only: noted, not fatal.
    const note = (...args: unknown[]) => {
      const m = /unknown format "([^"]+)"/.exec(String(args[0]));
      if (m) this.unknownFormats.add(m[1]!);
      else console.warn(...args);
    };
    this.ajv = new Ajv({ strict: false, allErrors: true, logger: { log: console.log, warn: note, error: console.error } });
    addFormats(this.ajv);
    this.ajv.addSchema(toJsonSchema({ components: doc.components ?? {} }) as Json, DOCUMENT_ID);
  }

  /**
   * A local `$ref` of a response or header object, followed. Fields beside the `$ref` (a
   * `required: true`) are kept over the target's: OpenAPI 3.0 ignores them, but they say what the
   * document means, and checking them is the stricter choice.
   */
  private deref<T extends { $ref?: string }>(node: T): T {
    let at: unknown = node;
    let beside: Json = {};
    for (let hops = 0; hops < 10 && typeof (at as { $ref?: string }).$ref === 'string'; hops++) {
      const { $ref: pointer, ...rest } = at as { $ref: string };
      beside = { ...rest, ...beside };
      at = pointer
        .replace(/^#\//, '')
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce<unknown>((o, key) => (o as Json | undefined)?.[key], this.doc);
      if (at === undefined) throw new Error(`unresolved $ref ${pointer}`);
    }
    return { ...(at as T), ...beside };
  }

  private validator(key: string, schema: Json): ValidateFunction {
    let v = this.validators.get(key);
    if (!v) {
      v = this.ajv.compile(toJsonSchema(schema) as Json);
      this.validators.set(key, v);
    }
    return v;
  }

  /** The response object the document declares for a status: exact, then `4XX`, then `default`. */
  responseFor(op: Operation, status: number): ResponseObject | undefined {
    const responses = this.doc.paths[op.path]?.[op.method.toLowerCase()]?.responses ?? {};
    const found = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses['default'];
    return found && this.deref(found);
  }

  check(op: Operation, res: ObservedResponse): Violation[] {
    return this.checkAgainst(op, this.responseFor(op, res.status), res);
  }

  /**
   * A method the path does not declare (HEAD included): no operation of the document answers it,
   * so it is checked against the 405 the document describes at its root (`x-method-not-allowed`).
   */
  checkUndeclaredMethod(op: Operation, res: ObservedResponse): Violation[] {
    const declared = this.doc['x-method-not-allowed'];
    return this.checkAgainst(op, res.status === 405 && declared ? this.deref(declared) : undefined, res);
  }

  private checkAgainst(op: Operation, response: ResponseObject | undefined, res: ObservedResponse): Violation[] {
    const out: Violation[] = [];
    const add = (kind: ViolationKind, message: string) => out.push({ kind, operation: op.id, status: res.status, message });
    if (!response) {
      add('status', `status ${res.status} is not declared`);
      return out;
    }
    const where = `${op.id} ${res.status}`;

    // Media type: one of the declared ones, or none when the response declares no content.
    const type = res.headers['content-type'];
    const declaredTypes = Object.keys(response.content ?? {});
    let schema: Json | undefined;
    let media: string | undefined;
    if (declaredTypes.length === 0) {
      if (type !== undefined || res.body.length > 0) add('media type', `declares no content, got ${type ?? 'no Content-Type'} with ${res.body.length} bytes`);
    } else if (type === undefined) {
      add('media type', `no Content-Type; declared ${declaredTypes.join(', ')}`);
    } else {
      media = essence(type);
      const declared = declaredTypes.find((d) => mediaMatches(d, media!));
      if (!declared) add('media type', `Content-Type ${media} is not declared (declared: ${declaredTypes.join(', ')})`);
      else schema = response.content![declared]!.schema;
    }

    // Headers: declared or transport; required ones present; values valid against their schema.
    // Content-Type is the media type checked above (OpenAPI ignores it among response headers).
    const declaredHeaders = new Map(Object.entries(response.headers ?? {}).map(([name, h]) => [name.toLowerCase(), this.deref(h)]));
    // A transport header the response declares all the same (a download's Content-Length) is checked.
    for (const [name, value] of Object.entries(res.headers)) {
      const header = declaredHeaders.get(name);
      if (!header) {
        if (name !== 'content-type' && !this.transport.has(name)) add('header', `header ${name} is not declared`);
        continue;
      }
      if (header.schema) {
        const errors = this.headerErrors(`${where} header ${name}`, header.schema, value);
        if (errors.length) add('header', `header ${name}: ${JSON.stringify(value)} ${errors.join('; ')}`);
      }
    }
    for (const [name, header] of declaredHeaders) {
      if (header.required && res.headers[name] === undefined) add('header', `required header ${name} is missing`);
    }

    // Body: JSON against the declared schema (a HEAD answer has none, by HTTP's rules).
    if (schema && media && /[/+]json$/.test(media) && op.method !== 'HEAD') {
      let body: unknown;
      try {
        body = JSON.parse(res.body.toString('utf8'));
      } catch {
        add('schema', `body is not JSON: ${res.body.toString('utf8').slice(0, 80)}`);
        return out;
      }
      const validate = this.validator(`${where} ${media}`, schema);
      if (!validate(body)) for (const e of describeErrors(validate.errors)) add('schema', e);
    }
    return out;
  }

  /** A header's value against its schema: as the text it is, or as a number when it reads as one. */
  private headerErrors(key: string, schema: Json, value: string): string[] {
    const validate = this.validator(key, schema);
    if (validate(value)) return [];
    const asText = describeErrors(validate.errors);
    if (!/^-?\d+(\.\d+)?$/.test(value)) return asText;
    return validate(Number(value)) ? [] : describeErrors(validate.errors);
  }
}
