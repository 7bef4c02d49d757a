import type { BulkExport } from '../../queries/get-bulk-exports/get-bulk-exports.query.js';
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { get as httpGet, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { runExport, type ExportRunResult } from '../../commands/export-bundles/export-run.handler.js';
import { exportDownloads, type ExportDownloadDoc } from '../../projections/exports/exports.projection.js';
import { EXPORT_COLUMNS, EXPORT_NAMES } from '../../src/domain/exports/export-bundle.js';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { runCli, until } from '../support/processes.js';
import { demoKey, getJson, startTestServer, testEnv, type TestServer } from '../support/server.js';

// About 40 trading days of the demo: an export takes well under a second.
const NOW = '2019-03-01T23:00:00Z';
const HEX64 = /^[0-9a-f]{64}$/;

/** A file as the listing shows it. */
type Listed = BulkExport;

interface Download {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** GET of a file (or anything) with a key and extra headers; the body as bytes. */
async function download(url: string, key: string | undefined, headers: Record<string, string> = {}): Promise<Download> {
  const res = await fetch(url, { headers: { ...(key ? { 'X-API-Key': key } : {}), ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** A GET with exactly the headers given (fetch adds its own to conditional requests). */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    httpGet(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** One export run in this process, over the server's own ports (as its nightly schedule runs it). */
async function exportNow(server: TestServer): Promise<Extract<ExportRunResult, { status: 'completed' }>> {
  const s = server.services;
  const result = await runExport({ events: s.events, reads: s.reads, files: s.exportFiles, clock: s.clock, ids: s.ids }, { trigger: 'cli' });
  expect(result.status).to.equal('completed');
  return result as Extract<ExportRunResult, { status: 'completed' }>;
}

/** The listing, once the read models show the bundle `runId` (they follow the log a moment later). */
async function listingOf(server: TestServer, key: string, runId: string): Promise<Listed[]> {
  let files: Listed[] = [];
  await until(async () => {
    const r = await getJson(`${server.url}/v1/bulk/exports`, key);
    files = (r.body['exports'] as Listed[] | undefined) ?? [];
    return files.length === 3 && files.every((f) => f.url.includes(`/${runId}/`));
  }, 10_000, 50);
  return files;
}

/** The data rows of a gunzipped CSV: its lines minus the header, the trailing newline not a row. */
function csvOf(gz: Buffer): { header: string; rows: string[]; text: string } {
  const text = gunzipSync(gz).toString('utf8');
  expect(text.endsWith('\n'), 'the file ends with a newline').to.equal(true);
  const lines = text.slice(0, -1).split('\n');
  return { header: lines[0]!, rows: lines.slice(1), text };
}

function expectProblem(r: { status: number; type: string; body: Record<string, any> }, status: number, code: string, what: string): void {
  expect(r.status, `${what}: ${JSON.stringify(r.body)}`).to.equal(status);
  expect(r.type, what).to.match(/^application\/problem\+json/);
  expect(r.body['code'], what).to.equal(code);
}

/**
 * The Backtest Pack over real HTTP (issue 17): `GET /v1/bulk/exports` lists the newest bundle,
 * each listed `url` downloads its gzipped CSV (ETag, If-None-Match, Range, If-Range), quant and
 * above only, free of credits, every download recorded for the account.
 */
describe('Bulk exports over HTTP (the Backtest Pack)', function () {
  this.timeout(120_000);

  describe('A server with the demo dataset', () => {
    let server: TestServer;
    let quant = '';
    let first: Extract<ExportRunResult, { status: 'completed' }>;
    let listed: Listed[];
    let history: Listed;
    let whole: Buffer;

    before(async () => {
      server = await startTestServer({ now: NOW });
      quant = demoKey(server.dir, 'quant');
    });
    after(async () => {
      await server?.stop();
    });

    it('lists no file before the first export run: 200 with an empty list and the note', async () => {
      const r = await getJson(`${server.url}/v1/bulk/exports`, quant);
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.type).to.match(/^application\/json/);
      expect(r.body).to.have.keys('exports', 'note');
      expect(r.body['exports']).to.deep.equal([]);
      expect(r.body['note']).to.be.a('string').and.not.be.empty;
    });

    it('after a run, lists the bundle\'s three files in order, each with a url, a row count, a sha256 and the minute it was written', async () => {
      first = await exportNow(server);
      listed = await listingOf(server, quant, first.run_id);
      expect(listed.map((f) => f.name)).to.deep.equal(['scores_history.csv.gz', 'divergence_events.csv.gz', 'scores_versions.csv.gz']);
      for (const f of listed) {
        expect(f).to.have.keys('bundle_id', 'name', 'url', 'row_count', 'sha256', 'generated_at');
        expect(f.bundle_id).to.equal(first.run_id);
        expect(f.url).to.equal(`${server.running.baseUrl}/v1/bulk/exports/${f.bundle_id}/${f.name}`);
        expect(f.url.startsWith(`${server.url}/`), f.url).to.equal(true);
        expect(Number.isInteger(f.row_count), `${f.name} row_count`).to.equal(true);
        expect(f.row_count).to.be.at.least(0);
        expect(f.sha256).to.match(HEX64);
        expect(f.generated_at).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/);
        // The pinned clock's minute, in UTC.
        expect(f.generated_at).to.equal('2019-03-01 23:00');
        // What the run reported is what is listed.
        const written = first.files.find((w) => w.name === f.name)!;
        expect({ row_count: f.row_count, sha256: f.sha256 }).to.deep.equal({ row_count: written.row_count, sha256: written.sha256 });
      }
      // The demo has data: a history row per ticker and trading day, at least.
      expect(listed[0]!.row_count).to.be.above(1000);
      history = listed[0]!;
    });

    it('downloads scores_history.csv.gz with a quant key: the gzipped bytes hash to the listed sha256 and hold row_count rows under the documented header', async () => {
      const r = await download(history.url, quant);
      expect(r.status).to.equal(200);
      expect(r.headers.get('content-type')).to.equal('application/gzip');
      expect(r.headers.get('content-length')).to.equal(String(r.bytes.length));
      expect(r.headers.get('etag')).to.equal(`"${history.sha256}"`);
      expect(r.headers.get('accept-ranges')).to.equal('bytes');
      expect(r.headers.get('content-disposition')).to.equal('attachment; filename="scores_history.csv.gz"');
      expect(sha256(r.bytes)).to.equal(history.sha256);
      const csv = csvOf(r.bytes);
      expect(csv.header).to.equal('ticker,date,main_street,wall_street,service_score,divergence_gap,estimated,restated_at');
      expect(csv.header).to.equal(EXPORT_COLUMNS['scores_history.csv.gz'].join(','));
      expect(csv.rows).to.have.length(history.row_count);
      // Every row has the header's columns (no field here holds a comma).
      for (const row of csv.rows) expect(row.split(','), row).to.have.length(8);
      whole = r.bytes;
    });

    it('downloads the other two files likewise: sha256, row count and header as listed', async () => {
      for (const f of listed.slice(1)) {
        const r = await download(f.url, quant);
        expect(r.status, f.name).to.equal(200);
        expect(r.headers.get('etag')).to.equal(`"${f.sha256}"`);
        expect(sha256(r.bytes), f.name).to.equal(f.sha256);
        const csv = csvOf(r.bytes);
        expect(csv.header, f.name).to.equal(EXPORT_COLUMNS[f.name as (typeof EXPORT_NAMES)[number]].join(','));
        expect(csv.rows, f.name).to.have.length(f.row_count);
      }
    });

    it('serves the file in ranges (206 with Content-Range and Content-Length) that stitch back to the whole file byte for byte', async () => {
      const size = whole.length;
      const step = Math.ceil(size / 5);
      const parts: Buffer[] = [];
      for (let start = 0; start < size; start += step) {
        const last = start + step >= size;
        const end = last ? size - 1 : start + step - 1;
        const range = last ? `bytes=${start}-` : `bytes=${start}-${end}`;
        const r = await download(history.url, quant, { Range: range });
        expect(r.status, range).to.equal(206);
        expect(r.headers.get('content-range'), range).to.equal(`bytes ${start}-${end}/${size}`);
        expect(r.headers.get('content-length'), range).to.equal(String(end - start + 1));
        expect(r.bytes.length, range).to.equal(end - start + 1);
        expect(r.headers.get('etag')).to.equal(`"${history.sha256}"`);
        expect(r.headers.get('content-type')).to.equal('application/gzip');
        parts.push(r.bytes);
      }
      expect(parts).to.have.length(5);
      const stitched = Buffer.concat(parts);
      expect(stitched.equals(whole), 'the ranges concatenated are the whole file').to.equal(true);
      expect(sha256(stitched)).to.equal(history.sha256);
    });

    it('serves a suffix range (the last N bytes) with 206, and the whole file (200) for several ranges or a malformed one', async () => {
      const size = whole.length;
      const suffix = await download(history.url, quant, { Range: 'bytes=-500' });
      expect(suffix.status).to.equal(206);
      expect(suffix.headers.get('content-range')).to.equal(`bytes ${size - 500}-${size - 1}/${size}`);
      expect(suffix.bytes.equals(whole.subarray(size - 500))).to.equal(true);
      // A range past the end is clipped to it.
      const clipped = await download(history.url, quant, { Range: `bytes=${size - 10}-${size + 10_000}` });
      expect(clipped.status).to.equal(206);
      expect(clipped.headers.get('content-range')).to.equal(`bytes ${size - 10}-${size - 1}/${size}`);
      expect(clipped.bytes.equals(whole.subarray(size - 10))).to.equal(true);
      for (const range of ['bytes=0-9,100-109', 'bytes=abc', 'items=0-5']) {
        const r = await download(history.url, quant, { Range: range });
        expect(r.status, range).to.equal(200);
        expect(r.headers.get('content-range'), range).to.equal(null);
        expect(r.bytes.equals(whole), range).to.equal(true);
      }
    });

    it('serves a suffix range longer than the file as the whole file with 206 (RFC 9110 14.1.2), not 416', async () => {
      const size = whole.length;
      const res = await fetch(history.url, { headers: { 'X-API-Key': quant, Range: `bytes=-${size + 1000}` } });
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(res.status, bytes.toString('utf8', 0, 300)).to.equal(206);
      expect(res.headers.get('content-range')).to.equal(`bytes 0-${size - 1}/${size}`);
      expect(bytes.equals(whole)).to.equal(true);
    });

    it('honours If-Range: the right ETag gets the range (206), another one the whole file (200)', async () => {
      const size = whole.length;
      const same = await download(history.url, quant, { Range: 'bytes=100-199', 'If-Range': `"${history.sha256}"` });
      expect(same.status).to.equal(206);
      expect(same.headers.get('content-range')).to.equal(`bytes 100-199/${size}`);
      expect(same.bytes.equals(whole.subarray(100, 200))).to.equal(true);

      const other = await download(history.url, quant, { Range: 'bytes=100-199', 'If-Range': `"${'0'.repeat(64)}"` });
      expect(other.status).to.equal(200);
      expect(other.headers.get('content-range')).to.equal(null);
      expect(other.headers.get('content-length')).to.equal(String(size));
      expect(other.bytes.equals(whole)).to.equal(true);
    });

    it('answers a range starting at or beyond the end with 416 range_not_satisfiable and Content-Range: bytes */size', async () => {
      const size = whole.length;
      for (const range of [`bytes=${size}-`, `bytes=${size + 1000}-${size + 2000}`]) {
        const res = await fetch(history.url, { headers: { 'X-API-Key': quant, Range: range } });
        const text = await res.text();
        expect(res.status, `${range}: ${text}`).to.equal(416);
        expect(res.headers.get('content-type'), range).to.match(/^application\/problem\+json/);
        expect((JSON.parse(text) as Record<string, unknown>)['code'], range).to.equal('range_not_satisfiable');
        expect(res.headers.get('content-range'), range).to.equal(`bytes */${size}`);
        expect(res.headers.get('x-credits-remaining'), `${range}: X-Credits-Remaining`).to.match(/^\d+$/);
      }
    });

    it('answers If-None-Match with the file\'s ETag by 304 and no body', async () => {
      // Sent as curl sends it: fetch() adds `Cache-Control: no-cache` to any conditional request,
      // which asks for an end-to-end reload (the whole file), not a validation.
      const r = await rawGet(history.url, { 'X-API-Key': quant, 'If-None-Match': `"${history.sha256}"` });
      expect(r.status).to.equal(304);
      expect(r.bytes.length).to.equal(0);
      expect(r.headers['etag']).to.equal(`"${history.sha256}"`);
      // Among other ETags, and weakly compared, it is still the file's.
      const listedAmong = await rawGet(history.url, { 'X-API-Key': quant, 'If-None-Match': `"${'a'.repeat(64)}", W/"${history.sha256}"` });
      expect(listedAmong.status).to.equal(304);
      // Another ETag: the whole file.
      const stale = await rawGet(history.url, { 'X-API-Key': quant, 'If-None-Match': `"${'f'.repeat(64)}"` });
      expect(stale.status).to.equal(200);
      expect(stale.bytes.equals(whole)).to.equal(true);
    });

    it('gates the listing and the downloads: 401 without a key, 403 tier below quant, 200 for quant and enterprise', async () => {
      const listing = `${server.url}/v1/bulk/exports`;
      expectProblem(await getJson(listing), 401, 'unauthorized', 'listing without a key');
      const anon = await fetch(history.url);
      expect(anon.status, 'download without a key').to.equal(401);
      expect(anon.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(((await anon.json()) as Record<string, unknown>)['code']).to.equal('unauthorized');

      for (const tier of ['builder', 'hobbyist'] as const) {
        expectProblem(await getJson(listing, demoKey(server.dir, tier)), 403, 'tier', `listing, ${tier}`);
        const res = await fetch(history.url, { headers: { 'X-API-Key': demoKey(server.dir, tier) } });
        const text = await res.text();
        expect(res.status, `download, ${tier}: ${text}`).to.equal(403);
        expect((JSON.parse(text) as Record<string, unknown>)['code']).to.equal('tier');
        expect(res.headers.get('x-credits-remaining'), `download, ${tier}: X-Credits-Remaining`).to.match(/^\d+$/);
        expect(text, 'a refusal carries no file bytes').not.to.include('ticker,date');
      }
      for (const tier of ['quant', 'enterprise'] as const) {
        const r = await getJson(listing, demoKey(server.dir, tier));
        expect(r.status, `listing, ${tier}`).to.equal(200);
        expect((r.body['exports'] as Listed[]).map((f) => f.sha256)).to.deep.equal(listed.map((f) => f.sha256));
        const d = await download(history.url, demoKey(server.dir, tier));
        expect(d.status, `download, ${tier}`).to.equal(200);
        expect(sha256(d.bytes)).to.equal(history.sha256);
      }
    });

    it('answers 404 not_found for an unknown bundle and for a name that is not an export file', async () => {
      const base = `${server.url}/v1/bulk/exports`;
      for (const url of [
        `${base}/exp_20190301T2300Z_ffffff/scores_history.csv.gz`,
        `${base}/no-such-bundle/scores_history.csv.gz`,
        `${base}/${first.run_id}/scores.csv.gz`,
        `${base}/${first.run_id}/run.lock`,
        `${base}/${first.run_id}/.scores_history.csv.gz.partial`,
      ]) {
        const res = await fetch(url, { headers: { 'X-API-Key': quant } });
        const text = await res.text();
        expect(res.status, `${url}: ${text}`).to.equal(404);
        expect(res.headers.get('content-type'), url).to.match(/^application\/problem\+json/);
        expect((JSON.parse(text) as Record<string, unknown>)['code'], url).to.equal('not_found');
        expect(res.headers.get('x-credits-remaining'), `${url}: X-Credits-Remaining`).to.match(/^\d+$/);
      }
    });

    it('costs no credit: X-Credits-Remaining is sent and stays the same across listings and downloads', async () => {
      const listing = `${server.url}/v1/bulk/exports`;
      const before = (await getJson(listing, quant)).headers.get('x-credits-remaining');
      expect(before, 'X-Credits-Remaining on the listing').to.be.a('string').and.match(/^\d+$/);
      const d = await download(history.url, quant);
      expect(d.headers.get('x-credits-remaining'), 'on a download').to.equal(before);
      const ranged = await download(history.url, quant, { Range: 'bytes=0-99' });
      expect(ranged.headers.get('x-credits-remaining'), 'on a ranged download').to.equal(before);
      const again = await getJson(listing, quant);
      expect(again.headers.get('x-credits-remaining'), 'on the next listing').to.equal(before);
      // A paid call moves it: the header is the balance, not a constant.
      const paid = await getJson(`${server.url}/v1/scores/AAPL`, quant);
      expect(paid.status).to.equal(200);
      expect(Number(paid.headers.get('x-credits-remaining'))).to.be.below(Number(before));
    });

    it('records every download for the account (key, request id, file, status, bytes sent), as the read model and `scores exports downloads` show', async () => {
      const account = server.running.demoKeys.find((k) => k.tier === 'quant')!.account_id;
      const issued = (await server.services.events.readStream(accountStream(account))).find((e) => e.type === 'ApiKeyIssued')!;
      const keyId = (issued.data as { key_id: string }).key_id;

      const full = await download(history.url, quant);
      const part = await download(history.url, quant, { Range: 'bytes=10-1009' });
      const tail = await download(history.url, quant, { Range: `bytes=${whole.length - 50}-` });
      const mine = [
        { r: full, status: 200, range: null },
        { r: part, status: 206, range: 'bytes=10-1009' },
        { r: tail, status: 206, range: `bytes=${whole.length - 50}-${whole.length - 1}` },
      ];
      const ids = mine.map((m) => m.r.headers.get('x-request-id')!);
      for (const id of ids) expect(id).to.match(/^req_/);

      const recorded = new Map<string, ExportDownloadDoc>();
      await until(async () => {
        const page = await server.services.reads.find(exportDownloads, { account_id: account }, { sort: [['at', -1]], limit: 500 });
        for (const d of page.items) recorded.set(d.request_id, d);
        return ids.every((id) => recorded.has(id));
      }, 10_000, 50);
      for (const [i, m] of mine.entries()) {
        expect(recorded.get(ids[i]!)).to.deep.include({
          account_id: account,
          key_id: keyId,
          request_id: ids[i],
          run_id: first.run_id,
          name: 'scores_history.csv.gz',
          status: m.status,
          range: m.range,
          bytes_sent: m.r.bytes.length,
          complete: true,
        });
      }
      // Only downloads are recorded: not the 304, the 416, nor the refusals.
      for (const d of recorded.values()) expect([200, 206]).to.include(d.status);

      // The CLI reads the same read models beside the running server.
      const cli = await runCli(['exports', 'downloads', '--account', account, '--json', '--limit', '500'], testEnv(server.dir, NOW));
      expect(cli.code, cli.stderr).to.equal(0);
      const listedByCli = (JSON.parse(cli.stdout) as { downloads: ExportDownloadDoc[] }).downloads;
      for (const [i, m] of mine.entries()) {
        const d = listedByCli.find((x) => x.request_id === ids[i]);
        expect(d, `${ids[i]} in the CLI's list`).to.not.equal(undefined);
        expect(d).to.deep.include({ account_id: account, key_id: keyId, status: m.status, bytes_sent: m.r.bytes.length, complete: true });
      }
      expect(listedByCli.every((d) => d.account_id === account)).to.equal(true);
      // Another account's downloads are not this one's.
      const enterprise = server.running.demoKeys.find((k) => k.tier === 'enterprise')!.account_id;
      const theirs = await runCli(['exports', 'downloads', '--account', enterprise, '--json'], testEnv(server.dir, NOW));
      expect(theirs.code, theirs.stderr).to.equal(0);
      const theirList = (JSON.parse(theirs.stdout) as { downloads: ExportDownloadDoc[] }).downloads;
      expect(theirList.map((d) => d.request_id)).to.not.include.members(ids);
      expect(theirList.every((d) => d.account_id === enterprise)).to.equal(true);
    });

    it('keeps the newest three bundles: after four more runs the oldest are deleted, their urls answer 404 and their directories are gone', async () => {
      const runs = [first];
      for (let i = 0; i < 4; i++) runs.push(await exportNow(server));
      const newest = runs.at(-1)!;
      const now = await listingOf(server, quant, newest.run_id);
      expect(now.map((f) => f.sha256)).to.deep.equal(newest.files.map((f) => f.sha256));
      // Each run reported what it deleted: the bundles beyond the newest three.
      expect(runs.flatMap((r) => r.deleted)).to.deep.equal([runs[0]!.run_id, runs[1]!.run_id]);

      const list = await runCli(['exports', 'list', '--json'], testEnv(server.dir, NOW));
      expect(list.code, list.stderr).to.equal(0);
      const status = new Map((JSON.parse(list.stdout) as { runs: { run_id: string; status: string }[] }).runs.map((r) => [r.run_id, r.status]));
      expect(runs.map((r) => status.get(r.run_id))).to.deep.equal(['deleted', 'deleted', 'completed', 'completed', 'completed']);

      for (const gone of runs.slice(0, 2)) {
        const res = await fetch(`${server.url}/v1/bulk/exports/${gone.run_id}/scores_history.csv.gz`, { headers: { 'X-API-Key': quant } });
        const text = await res.text();
        expect(res.status, text).to.equal(404);
        expect((JSON.parse(text) as Record<string, unknown>)['code']).to.equal('not_found');
        expect(existsSync(join(server.dir, 'exports', gone.run_id)), `${gone.run_id} removed`).to.equal(false);
      }
      const dirs = readdirSync(join(server.dir, 'exports'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
      expect(dirs.sort()).to.deep.equal(runs.slice(2).map((r) => r.run_id).sort());
      // The older bundles kept still serve downloads already under way.
      const kept = await download(`${server.url}/v1/bulk/exports/${runs[2]!.run_id}/scores_history.csv.gz`, quant);
      expect(kept.status).to.equal(200);
      expect(sha256(kept.bytes)).to.equal(runs[2]!.files[0]!.sha256);
    });
  });

  describe('A store with no data at all', () => {
    let server: TestServer;

    before(async () => {
      server = await startTestServer({ now: NOW, env: { SCORES_DEMO: 'off' } });
    });
    after(async () => {
      await server?.stop();
    });

    it('writes a bundle of three files with 0 rows, each its header line and a newline', async () => {
      const s = server.services;
      const { key } = await createAccountWithKey(s, { tier: 'quant' });
      // The key is known once its events reach the read models.
      await until(async () => (await getJson(`${server.url}/v1/bulk/exports`, key)).status === 200, 10_000, 50);
      const run = await exportNow(server);
      const listed = await listingOf(server, key, run.run_id);
      expect(listed.map((f) => f.name)).to.deep.equal([...EXPORT_NAMES]);
      for (const f of listed) {
        expect(f.row_count, f.name).to.equal(0);
        const r = await download(f.url, key);
        expect(r.status, f.name).to.equal(200);
        expect(sha256(r.bytes), f.name).to.equal(f.sha256);
        expect(gunzipSync(r.bytes).toString('utf8'), f.name).to.equal(`${EXPORT_COLUMNS[f.name as (typeof EXPORT_NAMES)[number]].join(',')}\n`);
      }
    });
  });
});
