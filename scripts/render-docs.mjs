#!/usr/bin/env node
// Build step (npm run build, after tsoa and before tsc): renders the customer guides from the
// repository's Markdown and the reference's curl samples from the served OpenAPI document, into
// src/app/http/generated/docs.ts (build output, like tsoa's routes.ts beside it). The server only
// serves what this wrote: nothing is rendered per request.
//
// The samples come from clients/openapi.json, the served document as the clients are generated
// from it (test/e2e/clients-generated.test.ts keeps it equal to what /openapi.json serves).
//
// Markdown by `marked` (pinned, 18.2.1, a dev dependency: used at build time only): CommonMark and
// GFM tables, no dependencies of its own, MIT, released every few weeks (18.2.1 on 2026-11-16),
// and its renderer hooks give the heading ids, the link rewriting and the scrolling code blocks
// below without a plugin. Redoc still bundles its own older copy (4.3.0, nested under redoc).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Marked } from 'marked';
import { operationsOf, snake } from './client-methods.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(root, 'src/app/http/generated/docs.ts');

/**
 * The guides, in the order of their nav. `source` is the Markdown file; `keep` (when set) the `## `
 * sections of it served to customers, the rest of that file being the operators' (linked from the
 * page, not served); `lead` replaces the file's own opening paragraphs where those are about the
 * implementation. The errors guide is `/docs/errors`, generated from the error codes.
 */
export const GUIDES = [
  { slug: 'getting-started', source: 'docs/guides/getting-started.md' },
  {
    slug: 'sync',
    source: 'docs/sync.md',
    keep: ['The loop', 'What `next_since` means', 'Why not the newest `restated_at`?', 'Errors'],
  },
  {
    slug: 'webhooks',
    source: 'docs/webhooks.md',
    lead: 'A webhook sends an HTTPS `POST` with a JSON body to your endpoint when one of its event types happens: `score_move` (a stock\'s `service_score` moves by 10 or more from its previous scored day) or `divergence_event` (a new divergence extreme starts, the flag date of an event of `GET /v1/divergence/events`). Webhooks need the quant plan or higher and cost no credits.',
    keep: ['Endpoints', 'Signing', 'The envelope', 'Retries and deactivation', 'Address safety'],
  },
  { slug: 'exports', source: 'docs/guides/exports.md' },
  { slug: 'ledger', source: 'docs/guides/ledger.md' },
  { slug: 'methodology', source: 'docs/methodology.md' },
  { slug: 'sdks', source: 'docs/guides/sdks.md' },
  { slug: 'mcp', source: 'docs/guides/mcp.md' },
];

/** GitHub's heading ids, so that links written for the repository (`sync.md#errors`) keep working. */
function slugify(text) {
  return text
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

/** `## ` sections of a Markdown file (code fences skipped), with the text before the first one. */
function sections(markdown) {
  const lines = markdown.split('\n');
  const out = [{ heading: null, lines: [] }];
  let fence = false;
  for (const line of lines) {
    if (/^(```|~~~)/.test(line)) fence = !fence;
    if (!fence && line.startsWith('## ')) out.push({ heading: line.slice(3).trim(), lines: [] });
    out.at(-1).lines.push(line);
  }
  return out;
}

/**
 * `@include <file>#<heading id> <lang>` on a line of its own: the first ```<lang> block under that
 * heading of that file, so that a script another doc holds (and a test runs as written there) is
 * shown without a second copy.
 */
function includes(text, from) {
  return text.replace(/^@include (\S+)#(\S+) (\w+)$/gm, (_m, file, id, lang) => {
    const source = readFileSync(join(root, file), 'utf8');
    const heading = source.split('\n').findIndex((l) => /^#{2,6} /.test(l) && slugify(l.replace(/^#+ /, '')) === id);
    if (heading < 0) throw new Error(`${from}: ${file} has no heading #${id}`);
    const rest = source.split('\n').slice(heading + 1).join('\n');
    const block = new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'm').exec(rest);
    if (!block) throw new Error(`${from}: no \`\`\`${lang} block under ${file}#${id}`);
    return '```' + lang + '\n' + block[1] + '```';
  });
}

/** The customer's part of a guide's source, as Markdown. */
function customerMarkdown(guide) {
  const text = includes(readFileSync(join(root, guide.source), 'utf8'), guide.source);
  const [intro, ...rest] = sections(text);
  const h1 = intro.lines.find((l) => l.startsWith('# '));
  const title = guide.title ?? h1.slice(2).trim();
  if (!guide.keep) return { title, markdown: text.replace(/^# .*\n/, '') };
  const missing = guide.keep.filter((k) => !rest.some((s) => s.heading === k));
  if (missing.length > 0) throw new Error(`${guide.source}: no section ${missing.join(', ')} (the guide's keep list names it)`);
  const lead = guide.lead ?? intro.lines.filter((l) => l !== h1).join('\n');
  const kept = rest.filter((s) => guide.keep.includes(s.heading)).map((s) => s.lines.join('\n'));
  return { title, markdown: [lead, ...kept].join('\n\n') };
}

/**
 * Links written for the repository: one to a guide's source becomes its page (`/docs/<slug>`,
 * anchor kept); one to another file of the repository is not served, so it stays as its name in
 * code; `site:/path` is a page of the server with no Markdown source (`site:/docs/errors`,
 * `site:/license`), so that every other link in docs/ stays a path of the repository; web links
 * and anchors are left alone.
 */
function linkTarget(href, from) {
  if (href.startsWith('site:/')) return href.slice('site:'.length);
  if (/^(https?:|mailto:|#)/.test(href) || href.startsWith('/')) return href;
  const [file, anchor] = href.split('#');
  const path = join(dirname(join(root, from)), file).slice(root.length + 1);
  const guide = GUIDES.find((g) => g.source === path);
  if (guide) return `/docs/${guide.slug}${anchor ? `#${anchor}` : ''}`;
  if (path === 'docs/product.md' && anchor === 'credit-costs') return '/#credits';
  return null;
}

const escape = (s) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

function renderGuide(guide) {
  const { title, markdown } = customerMarkdown(guide);
  const headings = [];
  const marked = new Marked({
    gfm: true,
    renderer: {
      heading({ tokens, depth, text }) {
        const inner = this.parser.parseInline(tokens);
        const id = slugify(text);
        headings.push({ depth, id, text: inner.replace(/<[^>]+>/g, '') });
        return `<h${depth} id="${id}">${inner}</h${depth}>\n`;
      },
      link({ href, title: linkTitle, tokens }) {
        const inner = this.parser.parseInline(tokens);
        const target = linkTarget(href, guide.source);
        if (target === null) return `${inner} (<code>${escape(join(dirname(guide.source), href.split('#')[0]))}</code> in the repository)`;
        return `<a href="${escape(target)}"${linkTitle ? ` title="${escape(linkTitle)}"` : ''}>${inner}</a>`;
      },
      // A code block scrolls sideways inside itself (the box takes focus, so a keyboard can scroll it).
      code({ text, lang }) {
        return `<pre class="code" tabindex="0"><code${lang ? ` class="language-${escape(lang)}"` : ''}>${escape(text)}</code></pre>\n`;
      },
      // Raw HTML in the Markdown is shown as text: the guides are Markdown only.
      html({ text }) {
        return escape(text);
      },
    },
  });
  const body = marked.parse(markdown, { async: false });
  const operatorNote = guide.keep
    ? `<p class="note">This page is the customer's part of <code>${escape(guide.source)}</code>; how the service does it, for those who run it, is in the rest of that file in the repository.</p>\n`
    : '';
  return { slug: guide.slug, title, source: guide.source, headings, html: body + operatorNote };
}

// ---- code samples ------------------------------------------------------------------------------

/** The base URL's placeholder in a sample, replaced by the server's own base URL as it serves it. */
const BASE = '{{BASE_URL}}';

/** Example values for query parameters whose operation cannot answer usefully without one. */
const QUERY_EXAMPLES = { tickers: 'AAPL,MSFT' };

const shellQuote = (s) => `'${s.replace(/'/g, `'\\''`)}'`;

function exampleOf(param) {
  return param.example ?? param.schema?.example ?? QUERY_EXAMPLES[param.name];
}

/** An object schema's example: its own, else each required property's example (or first enum value). */
function schemaExample(doc, schema) {
  const s = schema?.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
  if (!s) return undefined;
  if (s.example !== undefined) return s.example;
  if (s.type !== 'object' || !s.required?.length) return undefined;
  return Object.fromEntries(s.required.map((name) => [name, s.properties[name].example ?? s.properties[name].enum?.[0]]));
}

/** The body's example of a required body: the media type's example, else its schema's. */
function bodyExample(doc, op) {
  const media = op.requestBody?.required ? op.requestBody.content?.['application/json'] : undefined;
  if (!media) return undefined;
  return media.example ?? Object.values(media.examples ?? {})[0]?.value ?? schemaExample(doc, media.schema) ?? {};
}

/** curl: the method, the path with example parameters, the key from $SCORES_API_KEY and a JSON body where one is taken. */
function curlSample(doc, method, path, op) {
  const params = op.parameters ?? [];
  let url = path.replace(/\{([^}]+)\}/g, (_m, name) => encodeURIComponent(String(exampleOf(params.find((p) => p.in === 'path' && p.name === name)) ?? name)));
  const query = params.filter((p) => p.in === 'query' && (p.required || QUERY_EXAMPLES[p.name]) && exampleOf(p) !== undefined);
  if (query.length > 0) url += `?${query.map((p) => `${p.name}=${encodeURIComponent(String(exampleOf(p)))}`).join('&')}`;
  const lines = [`curl${method === 'get' ? '' : ` -X ${method.toUpperCase()}`} "${BASE}${url}"`, `  -H "X-API-Key: $SCORES_API_KEY"`];
  const body = bodyExample(doc, op);
  if (body !== undefined) lines.push(`  -H "Content-Type: application/json"`, `  -d ${shellQuote(JSON.stringify(body))}`);
  return lines.join(' \\\n');
}

/** The package names the SDKs install as (clients/python's module, clients/typescript's package.json). */
const PY_MODULE = 'scores_client';
const TS_PACKAGE = JSON.parse(readFileSync(join(root, 'clients/typescript/package.json'), 'utf8')).name;

/** A JSON value as a Python literal. */
function pyLiteral(v) {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (Array.isArray(v)) return `[${v.map(pyLiteral).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${pyLiteral(x)}`).join(', ')}}`;
  return JSON.stringify(v);
}

/** A JSON value as a TypeScript literal (keys unquoted where they can be). */
function tsLiteral(v) {
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return `[${v.map(tsLiteral).join(', ')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v).map(([k, x]) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)}: ${tsLiteral(x)}`);
    return entries.length ? `{ ${entries.join(', ')} }` : '{}';
  }
  return typeof v === 'string' ? `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(v);
}

/**
 * The SDKs' samples of an operation, after curl: the same example values as its curl sample, passed
 * to the SDK's method of the operation (named as scripts/client-methods.mjs names it: the
 * operationId, snake_case in Python), the key from SCORES_API_KEY, the answer printed (a file's
 * bytes written to a file). test/clients/code-samples-sdk.test.ts runs each against a live server.
 */
function sdkSamples(doc, facts, op) {
  const params = op.parameters ?? [];
  const pathArgs = facts.pathParams.map((p) => exampleOf(params.find((q) => q.in === 'path' && q.name === p.name) ?? p) ?? p.name);
  const query = facts.queryParams
    .filter((p) => (p.required || QUERY_EXAMPLES[p.name]) && exampleOf(p) !== undefined)
    // An array parameter (`tickers`, one comma-separated value on the wire) takes a list in both SDKs.
    .map((p) => [p.name, p.schema?.type === 'array' && typeof exampleOf(p) === 'string' ? exampleOf(p).split(',') : exampleOf(p)]);
  const body = bodyExample(doc, op);
  const binary = facts.response.kind === 'binary';
  const fileName = binary ? String(pathArgs.at(-1) ?? 'download') : null;

  const pyArgs = [...pathArgs.map(pyLiteral), ...Object.entries(body ?? {}).map(([k, v]) => `${k}=${pyLiteral(v)}`), ...query.map(([k, v]) => `${k}=${pyLiteral(v)}`)];
  const python = [
    `from ${PY_MODULE} import ScoresClient`,
    '',
    `with ScoresClient(base_url="${BASE}") as client:  # the key from SCORES_API_KEY`,
    `    ${binary ? 'data' : 'result'} = client.${snake(facts.id)}(${pyArgs.join(', ')})`,
    ...(binary
      ? [`with open(${pyLiteral(fileName)}, "wb") as f:`, '    f.write(data)', `print(len(data), "bytes written to", ${pyLiteral(fileName)})`]
      : ['print(result.model_dump_json(indent=2))']),
  ].join('\n');

  const tsArgs = [...pathArgs.map(tsLiteral)];
  if (query.length) tsArgs.push(tsLiteral(Object.fromEntries(query)));
  if (body !== undefined) tsArgs.push(tsLiteral(body));
  const typescript = [
    ...(binary ? [`import { writeFileSync } from 'node:fs';`] : []),
    `import { ScoresClient } from '${TS_PACKAGE}';`,
    '',
    `const scores = new ScoresClient({ baseUrl: '${BASE}' }); // the key from SCORES_API_KEY`,
    `const ${binary ? 'data' : 'result'} = await scores.${facts.id}(${tsArgs.join(', ')});`,
    ...(binary
      ? [`writeFileSync(${tsLiteral(fileName)}, Buffer.from(data));`, `console.log(data.byteLength, 'bytes written to', ${tsLiteral(fileName)});`]
      : ['console.log(JSON.stringify(result, null, 2));']),
  ].join('\n');

  return [
    { lang: 'Python', label: 'Python SDK', source: python },
    { lang: 'TypeScript', label: 'TypeScript SDK', source: typescript },
  ];
}

/** `x-codeSamples` of every operation, keyed `METHOD path`. */
function codeSamples(doc) {
  const out = {};
  const facts = new Map(operationsOf(doc).map((f) => [`${f.method} ${f.path}`, f]));
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const key = `${method.toUpperCase()} ${path}`;
      out[key] = [{ lang: 'Shell', label: 'curl', source: curlSample(doc, method, path, op) }, ...sdkSamples(doc, facts.get(key), op)];
    }
  }
  return out;
}

async function main() {
  // The served document as the clients are generated from it (clients/openapi.json, kept equal to
  // the server's by test/e2e/clients-generated.test.ts): a build script reads the document, not the app.
  const samples = codeSamples(JSON.parse(readFileSync(join(root, 'clients/openapi.json'), 'utf8')));
  const guides = GUIDES.map(renderGuide);
  writeFileSync(
    OUT,
    `// Generated by scripts/render-docs.mjs from ${GUIDES.map((g) => g.source).join(', ')} and the OpenAPI document. Do not edit.
/* eslint-disable */
export interface Guide { slug: string; title: string; source: string; headings: { depth: number; id: string; text: string }[]; html: string }
export interface CodeSample { lang: string; label: string; source: string }
export const BASE_URL_PLACEHOLDER = ${JSON.stringify(BASE)};
export const GUIDES: readonly Guide[] = ${JSON.stringify(guides, null, 1)};
export const CODE_SAMPLES: Readonly<Record<string, readonly CodeSample[]>> = ${JSON.stringify(samples, null, 1)};
`,
  );
  process.stderr.write(`render-docs: ${guides.length} guides, ${Object.keys(samples).length} operations' samples → ${OUT.slice(root.length + 1)}\n`);
}

await main();
