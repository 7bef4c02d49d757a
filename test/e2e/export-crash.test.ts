import type { BulkExport } from '../../queries/get-bulk-exports/get-bulk-exports.query.js';
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import type { ExportRunResult } from '../../commands/export-bundles/export-run.handler.js';
import { exportDownloads, exportRuns, type ExportDownloadDoc, type ExportRunDoc } from '../../projections/exports/exports.projection.js';
import { EXPORT_NAMES } from '../../src/domain/exports/export-bundle.js';
import { EXPORTS_STREAM } from '../../src/domain/exports/export.events.js';
import { runCli, spawnCli, startServerProcess, until } from '../support/processes.js';
import { demoKey, getJson, startTestServer, tempDir, testEnv, type TestServer } from '../support/server.js';

type Completed = Extract<ExportRunResult, { status: 'completed' }>;

/** A file as the listing shows it. */
type Listed = BulkExport;

/** The demo quant key of the data directory in use: each `describe` sets it once its server has started. */
let quant = '';
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** `scores exports run --json` as a separate process; its result. */
async function exportByCli(env: NodeJS.ProcessEnv): Promise<Completed> {
  const exit = await runCli(['exports', 'run', '--json'], env);
  expect(exit.code, exit.stderr).to.equal(0);
  const result = JSON.parse(exit.stdout) as ExportRunResult;
  expect(result.status).to.equal('completed');
  return result as Completed;
}

/** The listing once it names bundle `runId` (the server's read models follow the log a moment later). */
async function listingNames(baseUrl: string, runId: string): Promise<Listed[]> {
  let files: Listed[] = [];
  await until(async () => {
    const r = await getJson(`${baseUrl}/v1/bulk/exports`, quant);
    files = (r.body['exports'] as Listed[] | undefined) ?? [];
    return files.length === EXPORT_NAMES.length && files.every((f) => f.url.includes(`/${runId}/`));
  }, 15_000, 50);
  return files;
}

async function downloadBytes(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(url, { headers: { 'X-API-Key': quant, ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** Every file of the listing downloads whole, and hashes to its listed sha256. */
async function expectDownloadable(files: Listed[]): Promise<void> {
  for (const f of files) {
    const d = await downloadBytes(f.url);
    expect(d.status, f.name).to.equal(200);
    expect(sha256(d.bytes), f.name).to.equal(f.sha256);
  }
}

/** The bundle directories under `<dir>/exports` (run.lock is a file). */
const runDirs = (dir: string): string[] => {
  const root = join(dir, 'exports');
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
};

/** The `.<name>.partial` files of a run directory (it may vanish while read). */
const partials = (dir: string, runId: string): string[] => {
  try {
    return readdirSync(join(dir, 'exports', runId)).filter((n) => /^\..+\.partial$/.test(n));
  } catch {
    return [];
  }
};

/**
 * Export runs as separate processes (docs/exports.md): `scores exports run` beside a serving
 * process, a run killed with -9 halfway through a file, and the nightly schedule at server start.
 *
 * The contract shown: a bundle is listed only once all its files are in place; a run that died
 * leaves the listed bundle untouched and the lock free (it is the operating system's), and the
 * next run records it abandoned and clears what it left; the schedule writes one bundle per
 * scheduled time, however many times the server starts.
 */
describe('Bulk exports across processes and kill -9', function () {
  this.timeout(180_000);

  describe('`scores exports run` beside a running server process', () => {
    const now = '2019-03-01T23:00:00Z';
    const dir = tempDir('scores-export-beside-');
    const env = testEnv(dir, now);
    let server: { url: string; stop(): Promise<void> } | null = null;

    before(async () => {
      server = await startServerProcess(env);
      quant = demoKey(dir, 'quant');
    });
    after(async () => {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('writes a bundle that the server lists and serves, byte for byte', async () => {
      const before = await getJson(`${server!.url}/v1/bulk/exports`, quant);
      expect(before.status).to.equal(200);
      expect(before.body['exports']).to.deep.equal([]);

      const run = await exportByCli(env);
      expect(run.files.map((f) => f.name)).to.deep.equal([...EXPORT_NAMES]);
      const files = await listingNames(server!.url, run.run_id);
      expect(files.map((f) => ({ name: f.name, row_count: f.row_count, sha256: f.sha256 }))).to.deep.equal(
        run.files.map((f) => ({ name: f.name, row_count: f.row_count, sha256: f.sha256 })),
      );
      await expectDownloadable(files);
      expect(runDirs(dir)).to.deep.equal([run.run_id]);
    });

    it('a second run beside it is listed in its turn', async () => {
      const run = await exportByCli(env);
      const files = await listingNames(server!.url, run.run_id);
      expect(files.map((f) => f.sha256)).to.deep.equal(run.files.map((f) => f.sha256));
      expect(runDirs(dir)).to.have.length(2);
    });
  });

  describe('A run killed with -9 halfway through', () => {
    // About 375 trading days of the demo: a run takes seconds, long enough to be killed mid-file.
    const now = '2020-06-30T23:00:00Z';
    const dir = tempDir('scores-export-crash-');
    const env = testEnv(dir, now);
    let server: TestServer;
    let bundleA: Completed;
    let listedA: Listed[];
    let killed: string;

    before(async () => {
      const seeded = await runCli(['seed', '--json'], env);
      expect(seeded.code, seeded.stderr).to.equal(0);
      bundleA = await exportByCli(env);
      server = await startTestServer({ now, dir });
      quant = demoKey(dir, 'quant');
      listedA = await listingNames(server.url, bundleA.run_id);
    });
    after(async () => {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('is killed while a file is half written: its partial file stays behind, and bundle A is still the one listed and served', async function () {
      const { child, done } = spawnCli(['exports', 'run', '--json'], env);
      let exited = false;
      void done.then(() => (exited = true));
      const t0 = Date.now();
      try {
        await until(() => {
          if (exited) throw new Error('the run finished before a partial file was seen: make the store larger');
          const fresh = runDirs(dir).filter((d) => d !== bundleA.run_id);
          killed = fresh[0] ?? '';
          return fresh.length === 1 && partials(dir, killed).length > 0;
        }, 60_000, 2);
      } catch (err) {
        child.kill('SIGKILL');
        throw err;
      }
      child.kill('SIGKILL');
      const exit = await done;
      expect(exit.signal).to.equal('SIGKILL');
      this.test!.title += ` [killed ${Date.now() - t0} ms after its start]`;

      // What it left: its directory with a partial file, never listed.
      expect(runDirs(dir)).to.deep.equal([bundleA.run_id, killed].sort());
      expect(partials(dir, killed)).to.not.be.empty;

      const r = await getJson(`${server.url}/v1/bulk/exports`, quant);
      expect(r.status).to.equal(200);
      expect(r.body['exports']).to.deep.equal(listedA);
      for (const f of listedA) expect(f.url).to.include(`/${bundleA.run_id}/`);
      await expectDownloadable(listedA);
      // Its ExportStarted was recorded (the directory comes after it), and nothing more of it is served.
      const started = (await server.services.events.readStream(EXPORTS_STREAM)).filter((e) => e.type === 'ExportStarted');
      expect(started.map((e) => (e.data as { run_id: string }).run_id)).to.deep.equal([bundleA.run_id, killed]);
      const res = await fetch(`${server.url}/v1/bulk/exports/${killed}/scores_history.csv.gz`, { headers: { 'X-API-Key': quant } });
      expect(res.status, await res.text()).to.equal(404);
    });

    it('leaves the run lock free: it died with the process', async () => {
      const lock = await server.services.exportFiles.lock();
      expect(lock, 'the lock is taken at once').to.not.equal(null);
      await lock!.release();
    });

    it('the next run completes, records the killed run abandoned, removes its directory, and is listed', async () => {
      const next = await exportByCli(env);
      expect(next.deleted).to.deep.equal([]);
      expect(runDirs(dir)).to.deep.equal([bundleA.run_id, next.run_id].sort());
      expect(existsSync(join(dir, 'exports', killed))).to.equal(false);

      const stream = await server.services.events.readStream(EXPORTS_STREAM);
      const of = (runId: string) => stream.filter((e) => (e.data as { run_id: string }).run_id === runId).map((e) => e.type);
      expect(of(killed)[0]).to.equal('ExportStarted');
      expect(of(killed).at(-1)).to.equal('ExportAbandoned');
      expect(of(killed)).to.not.include('ExportCompleted');
      expect(of(next.run_id)).to.deep.equal(['ExportStarted', 'ExportFileWritten', 'ExportFileWritten', 'ExportFileWritten', 'ExportCompleted']);
      // Abandoned by the next run, in the append that starts it.
      const abandoned = stream.findIndex((e) => e.type === 'ExportAbandoned');
      expect(stream[abandoned + 1]).to.deep.include({ type: 'ExportStarted' });
      expect((stream[abandoned + 1]!.data as { run_id: string }).run_id).to.equal(next.run_id);
      expect((stream[abandoned]!.data as { at: string }).at).to.equal((stream[abandoned + 1]!.data as { started_at: string }).started_at);

      const files = await listingNames(server.url, next.run_id);
      expect(files.map((f) => f.sha256)).to.deep.equal(next.files.map((f) => f.sha256));
      await expectDownloadable(files);
      // The same data: the same bytes as bundle A.
      expect(files.map((f) => f.sha256)).to.deep.equal(listedA.map((f) => f.sha256));

      const list = await runCli(['exports', 'list', '--json'], env);
      expect(list.code, list.stderr).to.equal(0);
      const runs = (JSON.parse(list.stdout) as { runs: ExportRunDoc[] }).runs;
      expect(runs.map((r) => [r.run_id, r.status])).to.deep.equal([
        [next.run_id, 'completed'],
        [killed, 'abandoned'],
        [bundleA.run_id, 'completed'],
      ]);
      // Bundle A is still kept: a download under way can finish.
      const a = await downloadBytes(`${server.url}/v1/bulk/exports/${bundleA.run_id}/scores_history.csv.gz`);
      expect(a.status).to.equal(200);
      expect(sha256(a.bytes)).to.equal(bundleA.files[0]!.sha256);
    });

    it('a download the client drops is recorded as incomplete, and resumes with Range and If-Range to the same bytes', async () => {
      const file = listedA[2]!;
      const size = Number((await fetch(file.url, { method: 'GET', headers: { 'X-API-Key': quant, Range: 'bytes=0-0' } })).headers.get('content-range')!.split('/')[1]);
      // The client goes away after about 100 kB of a file of megabytes.
      const { received, requestId } = await new Promise<{ received: Buffer; requestId: string }>((resolve, reject) => {
        const chunks: Buffer[] = [];
        let got = 0;
        const req = httpGet(file.url, { headers: { 'X-API-Key': quant } }, (res) => {
          res.on('data', (c: Buffer) => {
            chunks.push(c);
            got += c.length;
            if (got >= 100_000) {
              req.destroy();
              resolve({ received: Buffer.concat(chunks), requestId: String(res.headers['x-request-id']) });
            }
          });
        });
        req.on('error', (err) => (got >= 100_000 ? undefined : reject(err)));
      });
      expect(size).to.be.above(1_000_000);

      let record: ExportDownloadDoc | null = null;
      await until(async () => (record = await server.services.reads.get(exportDownloads, requestId)) !== null, 10_000, 50);
      expect(record).to.deep.include({ account_id: 'demo-quant', name: file.name, status: 200, range: null, complete: false });
      expect(record!.bytes_sent).to.be.at.least(received.length).and.below(size);

      const rest = await downloadBytes(file.url, { Range: `bytes=${received.length}-`, 'If-Range': `"${file.sha256}"` });
      expect(rest.status).to.equal(206);
      expect(rest.headers.get('content-range')).to.equal(`bytes ${received.length}-${size - 1}/${size}`);
      expect(sha256(Buffer.concat([received, rest.bytes]))).to.equal(file.sha256);
    });
    it('a run while another holds the lock is refused as busy and writes nothing; the listing keeps the last bundle until the other completes', async () => {
      const stream0 = (await server.services.events.readStream(EXPORTS_STREAM)).length;
      const listedBefore = (await getJson(`${server.url}/v1/bulk/exports`, quant)).body['exports'] as Listed[];
      const dirsBefore = runDirs(dir);
      const first = spawnCli(['exports', 'run', '--json'], env);
      let exited = false;
      void first.done.then(() => (exited = true));
      try {
        await until(() => {
          if (exited) throw new Error('the run finished before a partial file was seen: make the store larger');
          return runDirs(dir).some((d) => !dirsBefore.includes(d) && partials(dir, d).length > 0);
        }, 60_000, 5);
        const second = await runCli(['exports', 'run', '--json'], env);
        expect(second.code, second.stdout).to.equal(1);
        expect(second.stderr).to.match(/another export run holds the lock/);
        // While it runs, the listing is the last completed bundle.
        expect((await getJson(`${server.url}/v1/bulk/exports`, quant)).body['exports']).to.deep.equal(listedBefore);
      } catch (err) {
        first.child.kill('SIGKILL');
        throw err;
      }
      const exit = await first.done;
      expect(exit.code, exit.stderr).to.equal(0);
      const run = JSON.parse(exit.stdout) as Completed;
      // Its events only: the refused run appended nothing.
      const stream = await server.services.events.readStream(EXPORTS_STREAM);
      expect(stream.slice(stream0).map((e) => [e.type, (e.data as { run_id: string }).run_id])).to.deep.equal([
        ['ExportStarted', run.run_id],
        ...EXPORT_NAMES.map((): [string, string] => ['ExportFileWritten', run.run_id]),
        ['ExportCompleted', run.run_id],
      ]);
      await listingNames(server.url, run.run_id);
    });
  });

  describe('The nightly schedule', () => {
    const now = '2019-03-01T23:00:00Z';
    const schedule = { SCORES_EXPORTS_SCHEDULE: '30 22 * * *' };
    const dir = tempDir('scores-export-schedule-');
    let server: TestServer | null = null;

    const started = async (s: TestServer) =>
      (await s.services.events.readStream(EXPORTS_STREAM)).filter((e) => e.type === 'ExportStarted').map((e) => e.data as { run_id: string; trigger: string; started_at: string });

    afterEach(async () => {
      await server?.stop();
      server = null;
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('a server started after 22:30 UTC with no bundle of that day writes one soon after its start', async () => {
      server = await startTestServer({ now, dir, env: schedule });
      quant = demoKey(dir, 'quant');
      let files: Listed[] = [];
      // The clock stands at `now`: the next 22:30 never comes, so only the start's catching up writes it.
      await until(async () => {
        const r = await getJson(`${server!.url}/v1/bulk/exports`, quant);
        files = (r.body['exports'] as Listed[] | undefined) ?? [];
        return files.length === EXPORT_NAMES.length;
      }, 120_000, 100);
      await expectDownloadable(files);
      const runs = await started(server);
      expect(runs).to.have.length(1);
      expect(runs[0]).to.include({ trigger: 'schedule', started_at: '2019-03-01T23:00:00.000Z' });
      const doc = await server.services.reads.get(exportRuns, runs[0]!.run_id);
      expect(doc).to.include({ status: 'completed', trigger: 'schedule' });
      expect(files[0]!.url).to.include(`/${runs[0]!.run_id}/`);
    });

    it('a second start at the same time does not run again: the day\'s bundle is there', async () => {
      server = await startTestServer({ now, dir, env: schedule });
      // The first check comes 5 s after the start; give it time to have run (and a run to start).
      await new Promise((r) => setTimeout(r, 8_000));
      expect(await started(server)).to.have.length(1);
      expect(runDirs(dir)).to.have.length(1);
    });

    it('a start after the next scheduled time writes the next day\'s bundle', async () => {
      const later = '2019-03-04T23:00:00Z';
      server = await startTestServer({ now: later, dir, env: schedule });
      await until(async () => (await started(server!)).length === 2, 20_000, 100);
      const runs = await started(server);
      expect(runs[1]).to.include({ trigger: 'schedule', started_at: '2019-03-04T23:00:00.000Z' });
      await listingNames(server.url, runs[1]!.run_id);
    });

    it('refuses an invalid SCORES_EXPORTS_SCHEDULE: `scores serve` exits non-zero naming it', async () => {
      const empty = tempDir('scores-export-bad-schedule-');
      const { child, done } = spawnCli(['serve'], testEnv(empty, now, { SCORES_EXPORTS_SCHEDULE: 'bad' }));
      const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
      try {
        const exit = await done;
        expect(exit.signal, 'it exits by itself').to.equal(null);
        expect(exit.code).to.not.equal(0);
        expect(exit.stderr).to.match(/SCORES_EXPORTS_SCHEDULE/);
        expect(exit.stderr).to.not.match(/listening on/);
      } finally {
        clearTimeout(guard);
        rmSync(empty, { recursive: true, force: true });
      }
    });
  });
});
