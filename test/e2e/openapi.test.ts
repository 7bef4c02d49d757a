import { SIGNAL_ALERT_TYPES, THEME_RELATIONSHIPS } from '../../src/domain/scores/reference.events.js';
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DAILY_FREE_PATHS } from '../../src/app/http/fair-use.js';
import { ERROR_CODES } from '../../src/core/errors.js';
import { projectRoot } from '../../src/core/paths.js';
import { HEADER, RESPONSE_HEADERS, TRANSPORT_HEADERS } from '../../src/web/response-headers.js';
import { PLANS, TIERS } from '../../src/domain/plans.js';
import { RATE_CARD, RATE_KEYS, isRateKey } from '../../src/domain/rate-card.js';
import { LEDGER_EVENT_TYPES } from '../../src/domain/ledger/ledger.events.js';
import { FIELD_DEFINITIONS } from '../../queries/get-meta/field-definitions.js';
import { INSTANT_BODY_SCHEMA, INSTANT_PARAM_SCHEMA } from '../../queries/shared/instants.js';
import { parseSince } from '../../commands/manage-webhooks/resend-request.js';
import type { TestServer } from '../support/server.js';
import { demoKey, getJson, startTestServer, tempDir } from '../support/server.js';

const run = promisify(execFile);

type Json = Record<string, any>;

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer?: string }[];
}

/** A linter's CLI (a node script under node_modules), its report on stdout whatever its exit code. */
async function runCli(script: string, args: string[]): Promise<string> {
  const root = projectRoot();
  // The machine has no internet: no telemetry, no update check.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_UPDATE_NOTIFIER: '1' };
  try {
    return (await run(process.execPath, [join(root, 'node_modules', script), ...args], { cwd: root, env, maxBuffer: 32 * 1024 * 1024 })).stdout;
  } catch (err) {
    // Both exit 1 when there are errors; the report is on stdout all the same.
    const stdout = (err as { stdout?: string }).stdout ?? '';
    if (!stdout.trim()) throw err;
    return stdout;
  }
}

/** `redocly lint` with the repo's redocly.yaml (the recommended ruleset): its problems. */
async function redocly(file: string): Promise<string[]> {
  const out = await runCli('@redocly/cli/bin/cli.js', ['lint', file, '--config', join(projectRoot(), 'redocly.yaml'), '--format', 'json']);
  const report = JSON.parse(out) as { problems: LintProblem[] };
  return report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location.map((l) => l.pointer).join(', ')}: ${p.message}`);
}

/** `spectral lint` with the repo's .spectral.yaml (spectral:oas and the service's rules): its results of every severity. */
async function spectral(file: string): Promise<string[]> {
  const out = await runCli('@stoplight/spectral-cli/dist/index.js', ['lint', file, '--ruleset', join(projectRoot(), '.spectral.yaml'), '--format', 'json', '--quiet']);
  const results = JSON.parse(out) as { code: string; message: string; path: string[]; severity: number }[];
  const level = ['error', 'warn', 'info', 'hint'];
  return results.map((r) => `${level[r.severity]} ${r.code} at ${r.path.join('.')}: ${r.message}`);
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

/** Every operation of the document: method, path and the operation object. */
const operationsOf = (doc: Json): { method: string; path: string; op: Json }[] =>
  Object.entries<Json>(doc['paths']).flatMap(([path, item]) =>
    Object.entries<Json>(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ method, path, op })),
  );

/** A header of a response, its `$ref` followed: the component's name and the header object. */
function headerOf(doc: Json, response: Json, name: string): { component: string; header: Json } | undefined {
  const ref = response['headers']?.[name]?.['$ref'] as string | undefined;
  if (!ref) return undefined;
  const component = ref.replace('#/components/headers/', '');
  return { component, header: doc['components']['headers'][component] };
}

/** A schema with its `$ref` (or single `allOf` reference) followed, keeping the referring schema's own keywords. */
function resolved(doc: Json, schema: Json): Json {
  const ref = (schema['$ref'] ?? schema['allOf']?.[0]?.['$ref']) as string | undefined;
  const target = ref ? (doc['components']['schemas'][ref.replace('#/components/schemas/', '')] as Json) : {};
  return { ...target, ...schema };
}

describe('The OpenAPI document', () => {
  let server: TestServer;
  let doc: Json;
  const dir = tempDir('openapi-lint-');
  const file = join(dir, 'openapi.json');
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z', env: { PUBLIC_BASE_URL: 'https://api.scores.test' } });
    const { status, body } = await getJson(`${server.url}/openapi.json`);
    expect(status).to.equal(200);
    doc = body;
    writeFileSync(file, JSON.stringify(doc, null, 2));
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes redocly lint with the recommended rules: no error, no warning', async () => {
    expect(await redocly(file)).to.deep.equal([]);
  });

  it('has one pair of ambiguous paths, the product\'s own, which is why redocly.yaml turns no-ambiguous-paths off', () => {
    // Two templates are ambiguous when a request matches both and neither is the more literal at
    // every segment (OpenAPI prefers a literal segment, so /v1/scores/history beats /v1/scores/{ticker}).
    const isParam = (seg: string) => seg.startsWith('{');
    const paths = Object.keys(doc['paths']);
    const ambiguous: string[] = [];
    for (const [i, a] of paths.entries()) {
      for (const b of paths.slice(i + 1)) {
        const [sa, sb] = [a.split('/'), b.split('/')];
        if (sa.length !== sb.length) continue;
        const pairs = sa.map((seg, k) => [seg, sb[k]!] as const);
        if (!pairs.every(([x, y]) => x === y || isParam(x) || isParam(y))) continue;
        const aMoreLiteral = pairs.some(([x, y]) => !isParam(x) && isParam(y));
        const bMoreLiteral = pairs.some(([x, y]) => isParam(x) && !isParam(y));
        if (aMoreLiteral && bMoreLiteral) ambiguous.push([a, b].sort().join(' ~ '));
      }
    }
    expect(ambiguous).to.deep.equal(['/v1/scores/social-heat/{ticker} ~ /v1/scores/{ticker}/history']);
  });

  it('passes spectral lint with spectral:oas and the service rules: no error, no warning', async () => {
    expect(await spectral(file)).to.deep.equal([]);
  });

  it('describes every error response as application/problem+json, with an example of each problem it names', () => {
    let checked = 0;
    for (const { method, path, op } of operationsOf(doc)) {
      for (const [status, response] of Object.entries<Json>(op['responses'])) {
        if (Number(status) < 400) continue;
        const where = `${method.toUpperCase()} ${path} ${status}`;
        expect(Object.keys(response['content']), where).to.deep.equal(['application/problem+json']);
        const media = response['content']['application/problem+json'];
        expect(media.schema, where).to.deep.equal({ $ref: '#/components/schemas/ProblemDetails' });
        const examples = Object.entries<Json>(media.examples);
        expect(examples, where).to.not.be.empty;
        for (const [code, { value }] of examples) {
          expect(value, where).to.include({ code, status: Number(status), type: `https://api.scores.test/docs/errors#${code}` });
          expect(value['title'], where).to.be.a('string').and.not.be.empty;
        }
        checked++;
      }
    }
    expect(checked).to.be.greaterThan(100);
    // A response that names its problems gets one example each.
    const score403 = doc['paths']['/v1/scores/{ticker}']['get'].responses['403'];
    expect(Object.keys(score403.content['application/problem+json'].examples)).to.deep.equal(['key_forbidden', 'coverage', 'cost_exceeds_max', 'key_expired', 'key_scope_forbidden']);
  });

  it('declares on every operation the statuses every request can get: 400, 431 and 500, and 401, 403 and 429 with a key; 304 on the daily bodies', () => {
    const ops = operationsOf(doc);
    expect(ops.length).to.be.greaterThan(20);
    for (const { method, path, op } of ops) {
      const where = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(op['responses']);
      expect(statuses, where).to.include.members(['400', '401', '403', '429', '431', '500']);
      const examples = (status: string) => Object.keys(op['responses'][status].content['application/problem+json'].examples);
      expect(examples('431'), where).to.deep.equal(['headers_too_large']);
      expect(examples('500'), where).to.deep.equal(['internal']);
      // Waiting cures a request rate, not an empty balance: credits_exhausted only where a call costs credits.
      const key = op['x-rate-card'] as string;
      expect(examples('429'), where).to.deep.equal(RATE_CARD[key as keyof typeof RATE_CARD].credits > 0 ? ['credits_exhausted', 'rate_limited'] : ['rate_limited']);
      // A plan below the operation's minimum is a 403 `tier`: declared exactly where there is a minimum.
      expect(examples('403').includes('tier'), where).to.equal(op['x-min-tier'] !== 'free');
      expect(statuses.includes('304'), where).to.equal((method === 'get' && DAILY_FREE_PATHS.includes(path)) || path === '/v1/bulk/exports/{bundle_id}/{name}');
    }
    // The six that declared no 400 before (an unknown query parameter is one everywhere).
    for (const path of ['/v1/usage', '/v1/track-record', '/v1/themes', '/v1/scores/{ticker}', '/v1/meta', '/v1/divergence/open']) {
      expect(doc['paths'][path]['get'].responses['400'].description, path).to.match(/query parameter/);
    }
    const download = doc['paths']['/v1/bulk/exports/{bundle_id}/{name}']['get'].responses;
    expect(Object.keys(download)).to.include.members(['200', '206', '304', '416']);
  });

  it('declares every header the service sends from its one table, with $refs to components.headers', () => {
    const components = doc['components']['headers'] as Record<string, Json>;
    // Each component is a row of RESPONSE_HEADERS, required or optional (`…Optional`), never retyped.
    for (const [name, header] of Object.entries(components)) {
      const row = RESPONSE_HEADERS[name.replace(/Optional$/, '') as keyof typeof RESPONSE_HEADERS];
      expect(row, name).to.not.equal(undefined);
      expect(header, name).to.deep.equal({ description: row.description, schema: row.schema, ...(name.endsWith('Optional') ? {} : { required: true }) });
    }
    for (const { method, path, op } of operationsOf(doc)) {
      const free = RATE_CARD[op['x-rate-card'] as keyof typeof RATE_CARD].credits === 0;
      for (const [status, response] of Object.entries<Json>(op['responses'])) {
        const where = `${method.toUpperCase()} ${path} ${status}`;
        const code = Number(status);
        for (const [name, ref] of Object.entries<Json>(response['headers'])) {
          const h = headerOf(doc, response, name);
          expect(h, `${where} ${name}: ${JSON.stringify(ref)}`).to.not.equal(undefined);
          expect(RESPONSE_HEADERS[h!.component.replace(/Optional$/, '') as keyof typeof RESPONSE_HEADERS].name, where).to.equal(name);
        }
        expect(headerOf(doc, response, HEADER.requestId)?.header['required'], where).to.equal(true);
        const credits = headerOf(doc, response, HEADER.creditsRemaining);
        if (code === 401 || code === 431) expect(credits, where).to.equal(undefined);
        else expect(credits?.header['required'] ?? false, where).to.equal(code < 400);
        for (const name of [HEADER.rateLimit, HEADER.rateLimitPolicy]) expect(headerOf(doc, response, name) !== undefined, `${where} ${name}`).to.equal(code !== 401 && code !== 431);
        const cost = headerOf(doc, response, HEADER.creditsCost);
        expect(cost !== undefined && cost.header['required'] !== true, `${where} X-Credits-Cost (optional)`).to.equal(code < 400 && code !== 401);
        const retry = headerOf(doc, response, HEADER.retryAfter);
        if (code === 429) expect(retry?.header['required'] ?? false, where).to.equal(free);
        else expect(retry, where).to.equal(undefined);
      }
    }
    for (const path of DAILY_FREE_PATHS) {
      for (const status of ['200', '304']) {
        const response = doc['paths'][path]['get'].responses[status];
        expect(headerOf(doc, response, HEADER.etag)?.component, `${path} ${status}`).to.equal('DailyETag');
        expect(headerOf(doc, response, HEADER.cacheControl)?.component, `${path} ${status}`).to.equal('DailyCacheControl');
      }
    }
    const download = doc['paths']['/v1/bulk/exports/{bundle_id}/{name}']['get'].responses;
    const names = (status: string) => Object.keys(download[status].headers).sort();
    const metering: string[] = [HEADER.requestId, HEADER.creditsRemaining, HEADER.rateLimit, HEADER.rateLimitPolicy];
    // X-Credits-Cost is declared on every answered call with a key; the download's answers do not send it (optional).
    expect(names('200')).to.include(HEADER.creditsCost);
    metering.push(HEADER.creditsCost);
    const cached = [HEADER.etag, HEADER.acceptRanges, HEADER.cacheControl];
    expect(names('200')).to.deep.equal([...metering, ...cached, HEADER.contentDisposition, HEADER.contentLength].sort());
    expect(names('206')).to.deep.equal([...metering, ...cached, HEADER.contentDisposition, HEADER.contentLength, HEADER.contentRange].sort());
    expect(names('304')).to.deep.equal([...metering, ...cached].sort());
    expect(headerOf(doc, download['416'], HEADER.contentRange)?.component).to.equal('UnsatisfiedRange');
  });

  it('describes the 405 every path answers to an undeclared method, with Allow, at the root, and lists the headers it leaves undeclared', () => {
    const allowed = doc['x-method-not-allowed'];
    expect(Object.keys(allowed.content['application/problem+json'].examples)).to.deep.equal(['method_not_allowed']);
    expect(allowed.headers[HEADER.allow]).to.include({ required: true });
    expect(allowed.headers[HEADER.requestId]).to.include({ required: true });
    expect(doc['components']['responses'] ?? {}).to.deep.equal({});
    const intro = doc['info']['description'] as string;
    for (const name of TRANSPORT_HEADERS) expect(intro, name).to.include(`\`${name}\``);
    for (const name of ['x-rate-card', 'x-credits', 'x-min-tier', 'x-method-not-allowed', 'x-dry-run', '405', '431']) expect(intro, name).to.include(name);
  });

  it('declares the budgets: X-Max-Credits and 403 cost_exceeds_max on every priced read, X-Dry-Run and its 204 once at the root', () => {
    const dry = doc['x-dry-run'];
    expect(dry.parameter).to.include({ name: 'X-Dry-Run', in: 'header' });
    expect(dry.status).to.equal(204);
    for (const name of [HEADER.requestId, HEADER.creditsCost, HEADER.creditsRemaining]) expect(dry.response.headers[name], name).to.include({ required: true });
    for (const { method, path, op } of operationsOf(doc)) {
      if (method !== 'get') continue;
      const names = ((op['parameters'] ?? []) as Json[]).map((p) => String(p['name']));
      expect(names, path).to.include('X-Max-Credits');
      const priced = RATE_CARD[op['x-rate-card'] as keyof typeof RATE_CARD].credits > 0;
      expect(JSON.stringify(op['responses']['403'] ?? {}).includes('cost_exceeds_max'), path).to.equal(priced);
      expect(op['responses'], path).to.not.have.property('204');
    }
  });

  it('states each operation’s price and minimum plan from the rate card, with no scopes on the apiKey requirement', () => {
    const seen = new Set<string>();
    for (const { method, path, op } of operationsOf(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(op['security'], where).to.deep.equal([{ api_key: [] }]);
      const key = op['x-rate-card'] as string;
      expect(isRateKey(key), where).to.equal(true);
      const entry = RATE_CARD[key as keyof typeof RATE_CARD];
      expect(entry.routes.map((r) => `${r.method} ${r.path}`), where).to.include(where);
      expect(op['x-credits'], where).to.deep.equal({ credits: entry.credits, unit: entry.unit });
      expect(op['x-min-tier'], where).to.equal(entry.min_tier);
      expect(op['description'], where).to.include(`**Rate card** \`${key}\``);
      seen.add(key);
    }
    expect([...seen].sort()).to.deep.equal([...RATE_KEYS].sort());
    const tags = (doc['tags'] as { name: string; description: string }[]).map((t) => t.name);
    for (const { op } of operationsOf(doc)) expect(tags).to.include.members(op['tags']);
  });

  it('closes the closed sets with the code’s own lists, and names every schema in letters and digits', () => {
    const schemas = doc['components']['schemas'] as Record<string, Json>;
    const prop = (schema: string, name: string) => resolved(doc, schemas[schema]!['properties'][name]);
    // A problem is one schema per code (told apart by `code`), each with its own status.
    const problems = schemas['ProblemDetails']!['discriminator']['mapping'] as Record<string, string>;
    expect(Object.keys(problems)).to.have.members(ERROR_CODES);
    for (const [code, ref] of Object.entries(problems)) {
      const problem = schemas[ref.replace('#/components/schemas/', '')]!;
      expect(problem['properties']['code']['enum'], code).to.deep.equal([code]);
      expect(problem['properties']['status'], code).to.include({ type: 'integer' });
    }
    expect(prop('UsageResponse', 'tier')['enum']).to.have.members([...TIERS]);
    expect(prop('EntitlementsResponse', 'coverage')['enum']).to.have.members([...new Set(Object.values(PLANS).map((p) => p.coverage))]);
    expect(prop('LedgerEntryResponse', 'kind')['enum']).to.have.members([...LEDGER_EVENT_TYPES]);
    // Nullable enums carry null among their values (OpenAPI 3.0 reads `nullable` only beside `type`).
    expect(prop('LedgerEntryResponse', 'endpoint')).to.include({ type: 'string', nullable: true });
    expect(prop('LedgerEntryResponse', 'endpoint')['enum']).to.have.members([...RATE_KEYS, null]);
    expect(prop('LedgerEntryResponse', 'channel')['enum']).to.have.members(['rest', 'mcp', null]);
    expect(prop('OpenDivergenceTrade', 'direction')['enum']).to.have.members(['bull', 'bear']);
    expect(prop('ThemeConstituent', 'relationship')['enum']).to.have.members([...THEME_RELATIONSHIPS]);
    expect(prop('SignalResponse', 'alert_type')['enum']).to.have.members([...SIGNAL_ALERT_TYPES]);
    expect(prop('MultiTickerHistoryRow', 'restated_at')).to.include({ type: 'string', pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$' });
    expect(prop('MultiTickerHistoryRow', 'restated_at')).to.not.have.property('format');
    expect(Object.keys(schemas).filter((name) => !/^[A-Za-z0-9]+$/.test(name))).to.deep.equal([]);
    // Only standard formats are left (a service text format is a pattern).
    const formats = new Set([...JSON.stringify(doc).matchAll(/"format":"([^"]+)"/g)].map((m) => m[1]));
    expect([...formats].filter((f) => !['date', 'date-time', 'uri', 'int32', 'int64', 'double', 'binary'].includes(f!))).to.deep.equal([]);
  });

  it('types every field as the /v1/meta field dictionary does: integers, dates and timestamps', () => {
    const schemas = doc['components']['schemas'] as Record<string, Json>;
    const EXCEPTIONS = [
      // The history's `since` echoes the text sent (a date, an instant or a timestamp).
      'MultiTickerHistoryResponse.since',
      // `rows` of /v1/meta's history depth is a count; everywhere else, the rows themselves.
      'HistoryDepth.rows',
    ];
    const mismatches: string[] = [];
    for (const [name, schema] of Object.entries(schemas)) {
      for (const [field, raw] of Object.entries<Json>(schema['properties'] ?? {})) {
        const s = resolved(doc, raw);
        const defined = FIELD_DEFINITIONS[field]?.type.replace(/ or null$/, '');
        const typed = s['type'] === 'integer' ? 'integer' : s['format'] === 'date' ? 'date' : /:\[0-9\]\{2\}:/.test(s['pattern'] ?? '') ? 'timestamp' : s['type'];
        const kinds = ['integer', 'date', 'timestamp'];
        // A field the dictionary gives several kinds (`tickers`: a list, or a count of them) is not checked.
        if (!defined || defined.includes(' or ') || EXCEPTIONS.includes(`${name}.${field}`)) continue;
        if ((kinds.includes(defined) || kinds.includes(typed)) && defined !== typed) mismatches.push(`${name}.${field}: ${typed}, the dictionary says ${defined}`);
      }
    }
    expect(mismatches).to.deep.equal([]);
  });

  it('links each listed export file to its download, with ids the listing gives (a tester following links downloads a real bundle)', () => {
    const links = doc['paths']['/v1/bulk/exports']['get'].responses['200'].links as Json;
    expect(links['DownloadFile']).to.deep.include({
      operationId: 'downloadBulkExportFile',
      parameters: { bundle_id: '$response.body#/exports/0/bundle_id', name: '$response.body#/exports/0/name' },
    });
    const download = (doc['paths']['/v1/bulk/exports/{bundle_id}/{name}']['get'].parameters as Json[]).map((p) => String(p['name']));
    expect(download).to.include.members(['bundle_id', 'name']);
    expect(Object.keys(doc['components']['schemas']['BulkExport'].properties as Json)).to.include.members(['bundle_id', 'name']);
  });

  it('types the query parameters the controllers parse as integers, dates and lists, with their ranges and defaults', () => {
    const param = (path: string, name: string) => (doc['paths'][path]['get'].parameters as Json[]).find((p) => p['name'] === name)!;
    expect(param('/v1/screener', 'limit').schema).to.deep.equal({ type: 'integer', minimum: 1, maximum: 650, default: 100 });
    expect(param('/v1/screener', 'min_score').schema).to.deep.equal({ type: 'integer', minimum: 0, maximum: 100 });
    expect(param('/v1/signals', 'limit').schema).to.include({ type: 'integer', maximum: 200, default: 50 });
    expect(param('/v1/divergence', 'limit').schema).to.include({ type: 'integer', maximum: 100, default: 25 });
    expect(param('/v1/earnings', 'days').schema).to.deep.equal({ type: 'integer', minimum: 0, maximum: 60, default: 14 });
    expect(param('/v1/scores/{ticker}/history', 'start').schema).to.deep.equal({ type: 'string', format: 'date' });
    // A date or a date-time (or a restated_at value), as parseInstantParam reads it.
    for (const path of ['/v1/scores/history', '/v1/scores/{ticker}/history']) expect(param(path, 'as_known_at').schema, path).to.deep.equal(INSTANT_PARAM_SCHEMA);
    // A list as one comma-separated value: the same text on the wire, an array for a generated client.
    const tickers = param('/v1/scores/history', 'tickers');
    expect(tickers).to.include({ style: 'form', explode: false });
    expect(tickers.schema).to.deep.equal({ type: 'array', items: { type: 'string', pattern: '^[A-Za-z0-9.-]+$', maxLength: 12 }, minItems: 1, maxItems: 50 });
    const month = new RegExp(param('/v1/usage/ledger', 'month').schema.pattern as string);
    expect(['2026-01', '2026-12'].filter((m) => month.test(m))).to.have.length(2);
    expect(['2026-13', '2026-00', '2026-1'].filter((m) => month.test(m))).to.deep.equal([]);
    // The ledger cursor's form (a page's seq); `since` an instant as as_known_at (a sync cursor is opaque).
    const ledgerCursor = new RegExp(param('/v1/usage/ledger', 'cursor').schema.pattern as string);
    expect(['0', '123456789012345'].filter((c) => ledgerCursor.test(c))).to.have.length(2);
    expect(['', '-1', '1.5', '1234567890123456', 'abc'].filter((c) => ledgerCursor.test(c))).to.deep.equal([]);
    expect(param('/v1/scores/history', 'since').schema).to.deep.equal(INSTANT_PARAM_SCHEMA);
    // A body's instant too: the resend's `since` is what parseSince reads, a date-time or a timestamp, not any string.
    const since = doc['components']['schemas']['ResendFailedRequest'].properties['since'] as Json;
    expect(since['anyOf']).to.deep.equal(INSTANT_BODY_SCHEMA.anyOf);
    const timestamp = new RegExp(INSTANT_BODY_SCHEMA.anyOf[1].pattern);
    for (const ok of ['2024-02-29T00:00:00Z', '2024-02-29 00:00:00']) expect(() => parseSince(ok), ok).to.not.throw();
    expect(timestamp.test('2024-02-29 00:00:00')).to.equal(true);
    for (const bad of ['2023-02-29 00:00:00', '2024-02-29', 'soon']) {
      expect(timestamp.test(bad), bad).to.equal(false);
      expect(() => parseSince(bad), bad).to.throw();
    }
    // No parameter is left a bare string: a new integer, date, list or cursor parameter must be typed too.
    const bare: string[] = [];
    for (const { path, op } of operationsOf(doc)) {
      for (const p of (op['parameters'] ?? []) as Json[]) if (p['in'] === 'query' && JSON.stringify(p['schema']) === '{"type":"string"}') bare.push(`${path} ${p['name']}`);
    }
    expect(bare).to.deep.equal([]);
  });

  it('is what the service sends: an error a client receives matches its documented example', async () => {
    const res = await fetch(`${server.url}/v1/scores/AAPL`);
    expect(res.status).to.equal(401);
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    const problem = (await res.json()) as Record<string, unknown>;
    const example = doc['paths']['/v1/scores/{ticker}']['get'].responses['401'].content['application/problem+json'].examples['unauthorized'].value;
    for (const field of ['type', 'title', 'status', 'code']) expect(example[field], field).to.equal(problem[field]);
  });

  it('is what the service sends: the declared headers of a charged call and of the 431 node answers match their schemas', async () => {
    const matches = (component: keyof typeof RESPONSE_HEADERS, value: string | null | undefined) => {
      const { schema } = RESPONSE_HEADERS[component] as { schema: { pattern?: string; enum?: string[]; type: string } };
      if (value === null || value === undefined) return false;
      if (schema.pattern) return new RegExp(schema.pattern).test(value);
      if (schema.enum) return schema.enum.includes(value);
      return schema.type === 'integer' && /^[0-9]+$/.test(value);
    };
    const res = await fetch(`${server.url}/v1/track-record`, { headers: { 'X-API-Key': demoKey(server.dir, 'builder') } });
    expect(res.status).to.equal(200);
    for (const [component, name] of [
      ['RequestId', HEADER.requestId],
      ['CreditsRemaining', HEADER.creditsRemaining],
      ['RateLimit', HEADER.rateLimit],
      ['RateLimitPolicy', HEADER.rateLimitPolicy],
      ['DailyETag', HEADER.etag],
      ['DailyCacheControl', HEADER.cacheControl],
    ] as const) {
      expect(matches(component, res.headers.get(name)), `${name}: ${res.headers.get(name)}`).to.equal(true);
    }
    // Refused by node before express: still a problem the document declares, naming its request.
    const big = await new Promise<{ status: number; requestId: string | undefined; body: string }>((resolve, reject) => {
      const { port } = new URL(server.url);
      const req = request({ host: '127.0.0.1', port, path: '/v1/usage', headers: { 'X-Pad': 'a'.repeat(17 * 1024) } }, (r) => {
        let body = '';
        r.on('data', (d: Buffer) => (body += d.toString()));
        r.on('end', () => resolve({ status: r.statusCode!, requestId: r.headers['x-request-id'] as string | undefined, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(big.status).to.equal(431);
    expect(matches('RequestId', big.requestId), String(big.requestId)).to.equal(true);
    const example = doc['paths']['/v1/usage']['get'].responses['431'].content['application/problem+json'].examples['headers_too_large'].value;
    expect(JSON.parse(big.body)).to.include({ type: example.type, title: example.title, status: 431, code: 'headers_too_large' });
  });
});
