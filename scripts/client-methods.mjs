// The SDKs' typed methods, one per operation of the OpenAPI document (scripts/generate-clients.mjs
// writes them): clients/typescript/src/generated/operations.ts and
// clients/python/src/scores_client/_operations.py. A method is named after its operationId
// (camelCase in TypeScript, snake_case in Python); its path parameters are positional, its query
// parameters and body fields optional named ones; date parameters take a string, a Date
// (TypeScript) or a date/datetime (Python); a response holding a list gets `to_pandas()` in Python.

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
/** Responses whose DataFrame columns are written by hand in clients/python/src/scores_client/frames.py. */
const HAND_FRAMES = { ScoreHistoryResponse: 'ScoreHistory', MultiTickerHistoryResponse: 'MultiTickerHistory', ScreenerResponse: 'Screener', DivergenceEventsResponse: 'DivergenceEvents' };

const refName = (ref) => ref.split('/').at(-1);
/** A Python method's name: the operationId in snake_case (`getScoreHistory` → `get_score_history`). */
export const snake = (id) => id.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const summaryLine = (op) => (op.summary ?? op.description ?? '').split('\n')[0].replace(/\*\//g, '*\\/').trim();

/** Every operation of the document, in path order: the facts both generators need. */
export function operationsOf(doc) {
  const ops = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${path} has no operationId`);
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => resolve(doc, p));
      ops.push({
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        summary: summaryLine(op),
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        body: bodyOf(doc, op),
        response: responseOf(op),
      });
    }
  }
  return ops;
}

function resolve(doc, node) {
  let n = node;
  while (n && n.$ref) n = n.$ref.split('/').slice(1).reduce((o, k) => o[k], doc);
  return n;
}

function bodyOf(doc, op) {
  if (!op.requestBody) return null;
  const schema = op.requestBody.content?.['application/json']?.schema;
  if (!schema) throw new Error(`${op.operationId}: a request body that is not JSON`);
  const resolved = resolve(doc, schema);
  return { required: op.requestBody.required === true, schema: refName(schema.$ref ?? 'inline'), properties: resolved.properties ?? {}, requiredFields: resolved.required ?? [] };
}

function responseOf(op) {
  const ok = Object.entries(op.responses).find(([status]) => /^2\d\d$/.test(status));
  if (!ok) throw new Error(`${op.operationId} has no 2xx answer`);
  const content = ok[1].content ?? {};
  const json = content['application/json']?.schema;
  if (json?.$ref) return { kind: 'json', schema: refName(json.$ref) };
  if (Object.keys(content).length > 0 && !json) return { kind: 'binary', mediaType: Object.keys(content)[0] };
  throw new Error(`${op.operationId}: its answer is neither a named JSON schema nor a file`);
}

/** `date` (YYYY-MM-DD), `instant` (a date or a date-time), or null: how a parameter's dates are written. */
export function dateKind(schema) {
  if (!schema) return null;
  if (schema.format === 'date') return 'date';
  if (schema.format === 'date-time' || (schema.anyOf ?? []).some((s) => s.format === 'date-time')) return 'instant';
  return null;
}

/** The array member of a response schema (its rows), or null: what `to_pandas()` makes a frame of. */
function listMember(schema) {
  // A nullable list (a key's `operations`) is a field of the answer, not the rows it holds.
  for (const [name, p] of Object.entries(schema.properties ?? {})) if (p.type === 'array' && p.nullable !== true) return { name, items: p.items };
  return null;
}

// ---------- TypeScript ----------

function tsQueryType(op, p) {
  const kind = dateKind(p.schema);
  const base = `NonNullable<operations['${op.id}']['parameters']['query']>['${p.name}']`;
  return kind ? 'DateLike' : base;
}

const pascal = (id) => id[0].toUpperCase() + id.slice(1);
/** A description's first sentence (of its first paragraph), on one line. */
const docLine = (text) => {
  const paragraph = (text ?? '').split(/\n\s*\n/)[0].replace(/\s+/g, ' ').trim();
  const sentence = /^.*?[.!?](?=\s|$)/.exec(paragraph)?.[0] ?? paragraph;
  return sentence.replace(/\*\//g, '*\\/');
};

/** The named type of an operation's query parameters: dates as DateLike, the rest as the document types them. */
function tsQueryInterface(op) {
  const fields = op.queryParams.map((p) => {
    const doc = docLine(p.description);
    return `${doc ? `  /** ${doc} */\n` : ''}  ${p.name}${p.required ? '' : '?'}: ${tsQueryType(op, p)};`;
  });
  return `/** The query parameters of \`${op.id}\` (\`${op.method} ${op.path}\`). */\nexport interface ${pascal(op.id)}Query {\n${fields.join('\n')}\n}`;
}

function tsMethod(op) {
  const name = op.id;
  const args = op.pathParams.map((p) => `${p.name}: operations['${op.id}']['parameters']['path']['${p.name}']`);
  const pieces = [];
  if (op.pathParams.length) pieces.push(`path: { ${op.pathParams.map((p) => p.name).join(', ')} }`);
  if (op.queryParams.length) {
    args.push(`query: ${pascal(op.id)}Query${op.queryParams.some((p) => p.required) ? '' : ' = {}'}`);
    const dates = op.queryParams.filter((p) => dateKind(p.schema)).map((p) => `${p.name}: '${dateKind(p.schema)}'`);
    pieces.push(`query: queryOf<NonNullable<operations['${op.id}']['parameters']['query']>>(query, ${dates.length ? `{ ${dates.join(', ')} }` : '{}'})`);
  }
  let init = pieces.length ? `{ params: { ${pieces.join(', ')} }` : '{';
  if (op.body) {
    const type = `components['schemas']['${op.body.schema}']`;
    args.push(op.body.required ? `body: ${type}` : `body: ${type} = {}`);
    init += `${init === '{' ? '' : ','} body`;
  }
  if (op.response.kind === 'binary') init += `${init === '{' ? '' : ','} parseAs: 'arrayBuffer'`;
  init += ' }';
  const returns = op.response.kind === 'binary' ? 'ArrayBuffer' : `components['schemas']['${op.response.schema}']`;
  const call = init === '{ }' ? `this.api.${op.method}('${op.path}')` : `this.api.${op.method}('${op.path}', ${init})`;
  const cast = op.response.kind === 'binary' ? ' as ArrayBuffer' : '';
  return [
    `  /** \`${op.method} ${op.path}\`: ${op.summary} */`,
    `  async ${name}(${args.join(', ')}): Promise<${returns}> {`,
    `    const { data } = await ${call};`,
    `    return data!${cast};`,
    '  }',
  ].join('\n');
}

export function typescriptOperations(doc) {
  const ops = operationsOf(doc);
  return `// Generated by scripts/generate-clients.mjs from the served /openapi.json: do not edit.
/* eslint-disable */
import type { Client } from 'openapi-fetch';
import { queryOf, type DateLike } from '../dates.js';
import type { components, operations, paths } from './schema.js';

/** The version of the API these methods were generated from (the document's \`info.version\`). */
export const API_VERSION = ${JSON.stringify(doc.info.version)};

/** Every operation of the document, by method name: its HTTP method and path. */
export const OPERATIONS = {
${ops.map((op) => `  ${op.id}: { method: '${op.method}', path: '${op.path}' },`).join('\n')}
} as const;

${ops.filter((op) => op.queryParams.length).map(tsQueryInterface).join('\n\n')}

/** A typed method per operation of the document; a failure throws the SDK's typed error. */
export abstract class Operations {
  abstract readonly api: Client<paths>;

${ops.map(tsMethod).join('\n\n')}
}
`;
}

// ---------- Python ----------

function pyScalar(schema, optional) {
  let t;
  if (schema?.enum) t = `Literal[${schema.enum.map((v) => JSON.stringify(v)).join(', ')}]`;
  else if (schema?.type === 'integer') t = 'int';
  else if (schema?.type === 'number') t = 'float';
  else if (schema?.type === 'boolean') t = 'bool';
  else if (schema?.type === 'array') t = 'Sequence[str]';
  else t = 'str';
  return optional ? `${t} | None` : t;
}

function pyParamType(p) {
  const kind = dateKind(p.schema);
  const t = kind === 'date' ? 'DateLike' : kind === 'instant' ? 'InstantLike' : pyScalar(p.schema, false);
  return p.required ? t : `${t} | None`;
}

function pyQueryValue(p) {
  const kind = dateKind(p.schema);
  if (kind === 'date') return `date_param(${p.name}, ${JSON.stringify(p.name)})`;
  if (kind === 'instant') return `instant_param(${p.name}, ${JSON.stringify(p.name)})`;
  return p.name;
}

function pyReturn(doc, op) {
  if (op.response.kind === 'binary') return { type: 'bytes', parse: (r) => `${r}.content` };
  const name = op.response.schema;
  const frame = frameClassName(doc, name);
  const cls = frame ?? `models.${name}`;
  return { type: cls, parse: (r) => `${cls}.model_validate_json(${r}.content)` };
}

function pyMethod(doc, op, asyncMethod) {
  const args = ['self', ...op.pathParams.map((p) => `${p.name}: ${pyScalar(p.schema, false)}`)];
  // Body fields follow the path parameters (required ones first); query parameters are named only.
  const isRequired = (field) => op.body.requiredFields.includes(field);
  const bodyFields = op.body ? Object.entries(op.body.properties).sort(([a], [b]) => Number(isRequired(b)) - Number(isRequired(a))) : [];
  for (const [field, schema] of bodyFields) args.push(`${field}: ${pyScalar(schema, !isRequired(field))}${isRequired(field) ? '' : ' = None'}`);
  const named = op.queryParams.map((p) => `${p.name}: ${pyParamType(p)}${p.required ? '' : ' = None'}`);
  if (named.length) args.push('*', ...named);
  const ret = pyReturn(doc, op);
  const path = op.path.replace(/\{(\w+)\}/g, (_, n) => `{path_segment(${n})}`);
  const call = [`${JSON.stringify(op.method)}`, op.pathParams.length ? `f"${path}"` : JSON.stringify(op.path)];
  if (op.queryParams.length) call.push(`params={${op.queryParams.map((p) => `${JSON.stringify(p.name)}: ${pyQueryValue(p)}`).join(', ')}}`);
  if (op.body) call.push(`json=body_of({${bodyFields.map(([f]) => `${JSON.stringify(f)}: ${f}`).join(', ')}})`);
  const aw = asyncMethod ? 'await ' : '';
  const described = [...op.pathParams, ...op.queryParams].map((p) => [p.name, p.description]).concat(bodyFields.map(([f, sch]) => [f, sch.description]));
  const argDocs = described.filter(([, d]) => docLine(d)).map(([n, d]) => `        ${n}: ${docLine(d).replace(/\\/g, '\\\\').replace(/"""/g, "'''")}`);
  const docstring = argDocs.length
    ? [`        """\`\`${op.method} ${op.path}\`\`: ${op.summary.replace(/"""/g, "'''")}`, '', ...argDocs, '        """']
    : [`        """\`\`${op.method} ${op.path}\`\`: ${op.summary.replace(/"""/g, "'''")}"""`];
  return [
    `    ${asyncMethod ? 'async ' : ''}def ${snake(op.id)}(${args.join(', ')}) -> ${ret.type}:`,
    ...docstring,
    `        r = ${aw}self.request(${call.join(', ')})`,
    `        return ${ret.parse('r')}`,
  ].join('\n');
}

/** The class of a response with `to_pandas()`: by hand (frames.py) or generated here; null without a list. */
function frameClassName(doc, schemaName) {
  if (HAND_FRAMES[schemaName]) return HAND_FRAMES[schemaName];
  return listMember(doc.components.schemas[schemaName]) ? `${schemaName.replace(/Response$/, '')}Frame` : null;
}

/** The pandas dtype of a column of this schema (frames.py `frame` reads `date` and `instant`). */
function dtypeOf(doc, schema, required) {
  const s = resolve(doc, schema) ?? {};
  const nullable = s.nullable === true || !required;
  if (s.type === 'string' && s.format === 'date') return 'date';
  if (s.type === 'string' && s.format === 'date-time') return 'instant';
  if (s.type === 'string' && s.enum) return 'category';
  if (s.type === 'string') return 'string';
  if (s.type === 'number') return nullable ? 'Float64' : 'float64';
  if (s.type === 'integer') return 'Int64';
  if (s.type === 'boolean') return nullable ? 'boolean' : 'bool';
  return 'object';
}

function pyFrameClass(doc, schemaName) {
  const cls = frameClassName(doc, schemaName);
  const member = listMember(doc.components.schemas[schemaName]);
  const items = resolve(doc, member.items);
  const lines = [`class ${cls}(models.${schemaName}):`, `    def to_pandas(self) -> pd.DataFrame:`];
  if (items.type === 'object' && items.properties) {
    const cols = Object.entries(items.properties).map(([n, s]) => `${JSON.stringify(n)}: ${JSON.stringify(dtypeOf(doc, s, (items.required ?? []).includes(n)))}`);
    const constant = `_${snake(cls).toUpperCase()}_COLUMNS`;
    lines.unshift(`${constant} = {${cols.join(', ')}}`, '', '');
    lines.push(`        """\`\`${member.name}\`\`, one row each, a column per field."""`, `        return frame(self.${member.name}, ${constant})`);
  } else {
    const column = member.name.replace(/s$/, '');
    lines.push(`        """\`\`${member.name}\`\` as one column, \`\`${column}\`\`."""`, `        return value_frame(self.${member.name}, ${JSON.stringify(column)}, ${JSON.stringify(dtypeOf(doc, items, true))})`);
  }
  return lines.join('\n');
}

export function pythonOperations(doc) {
  const ops = operationsOf(doc);
  const generatedFrames = Object.keys(doc.components.schemas).filter((n) => !HAND_FRAMES[n] && frameClassName(doc, n) && ops.some((o) => o.response.schema === n));
  const handFrames = [...new Set(ops.map((o) => HAND_FRAMES[o.response.schema]).filter(Boolean))];
  return `# Generated by scripts/generate-clients.mjs from the served /openapi.json: do not edit.
"""A typed method per operation of the API (\`\`Operations\`\` for the sync client, \`\`AsyncOperations\`\`
for the async one) and the responses holding a list, each with \`\`to_pandas()\`\`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import httpx

from . import models
from ._params import DateLike, InstantLike, body_of, date_param, instant_param, path_segment
from .frames import ${handFrames.sort().join(', ')}, frame, value_frame

if TYPE_CHECKING:
    import pandas as pd

#: The version of the API these methods were generated from (the document's \`\`info.version\`\`).
API_VERSION = ${JSON.stringify(doc.info.version)}

#: Every operation of the document, by method name: its HTTP method and path.
OPERATIONS: dict[str, tuple[str, str]] = {
${ops.map((op) => `    ${JSON.stringify(snake(op.id))}: (${JSON.stringify(op.method)}, ${JSON.stringify(op.path)}),`).join('\n')}
}


${generatedFrames.map((n) => pyFrameClass(doc, n)).join('\n\n\n')}


class Operations:
    """A typed method per operation; a failure raises the SDK's typed error."""

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None) -> httpx.Response:
        raise NotImplementedError

${ops.map((op) => pyMethod(doc, op, false)).join('\n\n')}


class AsyncOperations:
    """A typed coroutine per operation; a failure raises the SDK's typed error."""

    async def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None) -> httpx.Response:
        raise NotImplementedError

${ops.map((op) => pyMethod(doc, op, true)).join('\n\n')}
`;
}
