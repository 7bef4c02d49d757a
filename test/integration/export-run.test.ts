import { expect } from 'chai';
import { parse as parseCsv } from 'csv-parse/sync';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { exportRunDecider } from '../../src/domain/exports/export-run.decider.js';
import { keptBundles } from '../../src/domain/exports/export-run.state.js';
import { runExport, type ExportDeps, type ExportProgress } from '../../commands/export-bundles/export-run.handler.js';
import { divergenceEvents, divergenceProjection, type DivergenceEventDoc } from '../../projections/divergence/divergence.projection.js';
import { rowAt, scoreHistory, scoreHistoryProjection, scoreVersions, type HistoryBucket, type ScoreVersion } from '../../projections/score-history/score-history.projection.js';
import { gapOf } from '../../projections/shared/score-row.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import { fixedClock } from '../../src/core/clock.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { ReadStore, Write } from '../../src/core/read-store.port.js';
import { EXPORT_COLUMNS, EXPORT_NAMES, type ExportName } from '../../src/domain/exports/export-bundle.js';
import { EXPORTS_STREAM, type ExportFileWritten, type ExportRunEvent, type ExportStarted } from '../../src/domain/exports/export.events.js';
import { tempDir, testEnv } from '../support/server.js';

// The demo starts on 2019-01-02: two months of it seed in a few seconds and export in well under one.
const NOW = '2019-03-01T23:00:00.000Z';
const [HISTORY, DIVERGENCE, VERSIONS] = EXPORT_NAMES;

type Csv = string[][];

/** A cell as the file writes it: numbers as JavaScript writes them, booleans as words, null as nothing. */
const cell = (v: string | number | boolean | null): string => (v === null ? '' : typeof v === 'boolean' ? (v ? 'true' : 'false') : String(v));

async function all<T>(docs: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const d of docs) out.push(d);
  return out;
}

/** Every `.partial` file under a directory. */
function partials(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((p) => p.endsWith('.partial'));
}

/** An export store in a temp dir: the demo (or nothing) up to NOW, read models caught up and following the log. */
async function openStore(env: Record<string, string> = {}): Promise<{ dir: string; services: Services; deps: ExportDeps; close(): Promise<void> }> {
  const dir = tempDir('scores-export-run-');
  const clock = fixedClock(NOW);
  const services = await openServices(loadConfig(testEnv(dir, NOW, env)), { clock });
  await seedIfEmpty(services, { progress: false });
  await catchUpReadModels(services, { progress: false });
  return {
    dir,
    services,
    deps: { events: services.events, reads: services.reads, files: services.exportFiles, clock, ids: services.ids },
    async close() {
      await services.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('Export runs (the Backtest Pack from the read models)', function () {
  this.timeout(120_000);

  describe('When a run completes over a demo store', () => {
    let store: Awaited<ReturnType<typeof openStore>>;
    let reads: ReadStore;
    let runId: string;
    let written: ExportFileWritten['data'][];
    const csv = {} as Record<ExportName, Csv>;
    const onDisk = {} as Record<ExportName, Buffer>;
    let buckets: HistoryBucket[];
    let versionDocs: ScoreVersion[];
    let historyRows: number;
    let progress: ExportProgress[];
    let positions: Record<string, string | null>;

    before(async () => {
      store = await openStore();
      reads = store.services.reads;
      buckets = await all(reads.scan(scoreHistory));
      versionDocs = await all(reads.scan(scoreVersions));
      historyRows = buckets.reduce((n, b) => n + b.days.length, 0);
      positions = {
        [scoreHistoryProjection.name]: await reads.checkpoint(scoreHistoryProjection.name),
        [divergenceProjection.name]: await reads.checkpoint(divergenceProjection.name),
      };
      progress = [];
      const result = await runExport(store.deps, { trigger: 'cli', onProgress: (p) => progress.push(p) });
      if (result.status !== 'completed') throw new Error(`the run did not complete: ${result.status}`);
      runId = result.run_id;
      written = result.files;
      for (const name of EXPORT_NAMES) {
        onDisk[name] = readFileSync(join(store.dir, 'exports', runId, name));
        const records: Csv = parseCsv(gunzipSync(onDisk[name]), { record_delimiter: '\n' });
        csv[name] = records;
      }
    });
    after(() => store?.close());

    const fileOf = (name: ExportName) => written.find((f) => f.name === name)!;
    const data = (name: ExportName) => csv[name].slice(1);

    it('has a demo store with restated rows to export (the test is not vacuous)', () => {
      expect(historyRows).to.be.greaterThan(10_000);
      expect(versionDocs.length).to.be.greaterThan(50);
      expect(buckets.some((b) => Object.keys(b.restated).length > 0)).to.equal(true);
    });

    it('records the run on the `exports` stream: started with the snapshot\'s positions, each file, completed', async () => {
      const events = (await store.services.events.readStream(EXPORTS_STREAM)) as unknown as ExportRunEvent[];
      expect(events.map((e) => e.type)).to.deep.equal(['ExportStarted', 'ExportFileWritten', 'ExportFileWritten', 'ExportFileWritten', 'ExportCompleted']);
      const started = events[0] as ExportStarted;
      expect(started.data).to.deep.equal({ run_id: runId, trigger: 'cli', started_at: NOW, positions, consistent: true });
      expect(positions[scoreHistoryProjection.name]).to.be.a('string');
      expect(events.slice(1, 4).map((e) => e.data)).to.deep.equal(written);
      expect(written.map((f) => f.name)).to.deep.equal([...EXPORT_NAMES]);
      expect(events[4]!.data).to.deep.equal({ run_id: runId, completed_at: NOW });
      expect(await store.deps.files.runs()).to.deep.equal([runId]);
      expect(partials(join(store.dir, 'exports'))).to.deep.equal([]);
    });

    for (const name of EXPORT_NAMES) {
      it(`${name}: the sha256 and byte count recorded are the file's on disk, and it is gzip`, () => {
        const file = fileOf(name);
        expect(file.sha256).to.equal(createHash('sha256').update(onDisk[name]).digest('hex'));
        expect(file.bytes).to.equal(statSync(join(store.dir, 'exports', runId, name)).size);
        expect(file.bytes).to.equal(onDisk[name].length);
        expect(file.generated_at).to.equal(NOW);
        expect([onDisk[name][0], onDisk[name][1]]).to.deep.equal([0x1f, 0x8b]);
      });

      it(`${name}: the header row is the file's columns, and every record has them all`, () => {
        expect(csv[name][0]).to.deep.equal(EXPORT_COLUMNS[name]);
        for (const [i, record] of csv[name].entries()) if (record.length !== EXPORT_COLUMNS[name].length) expect.fail(`record ${i} has ${record.length} fields`);
        // Unix line ends, a final one, nothing after.
        const text = gunzipSync(onDisk[name]).toString('utf8');
        expect(text.endsWith('\n')).to.equal(true);
        expect(text.includes('\r')).to.equal(false);
      });
    }

    it('counts rows as the read models hold them: history rows, divergence events, history rows plus superseded versions', async () => {
      const expected: Record<ExportName, number> = {
        [HISTORY]: historyRows,
        [DIVERGENCE]: await reads.count(divergenceEvents, {}),
        [VERSIONS]: historyRows + (await reads.count(scoreVersions, {})),
      };
      for (const name of EXPORT_NAMES) {
        expect(data(name).length, `${name} records`).to.equal(expected[name]);
        expect(fileOf(name).row_count, `${name} row_count`).to.equal(expected[name]);
      }
      expect(versionDocs.length).to.equal(expected[VERSIONS] - historyRows);
    });

    it(`${HISTORY}: every row is the read model's (rowAt), field by field, in ticker and date order`, () => {
      const rows = data(HISTORY);
      let k = 0;
      let restated = 0;
      for (const b of buckets) {
        for (let i = 0; i < b.days.length; i++, k++) {
          const r = rowAt(b, i);
          const expected = [r.ticker, r.date, r.main_street, r.wall_street, r.service_score, r.divergence_gap, r.estimated, r.restated_at].map(cell);
          if (rows[k]!.join() !== expected.join()) expect(rows[k], `row ${k + 1}`).to.deep.equal(expected);
          if (r.version > 1) restated++;
        }
      }
      expect(k).to.equal(rows.length);
      expect(restated).to.be.greaterThan(0);
    });

    it(`${HISTORY}: a sample of rows reads back as the values (numbers, estimated, restated_at as ISO)`, () => {
      const rows = data(HISTORY);
      const flat = buckets.flatMap((b) => b.days.map((_, i) => rowAt(b, i)));
      for (let k = 0; k < rows.length; k += 997) {
        const [ticker, date, ms, ws, ss, gap, estimated, restatedAt] = rows[k]!;
        const r = flat[k]!;
        const at = `row ${k + 1}`;
        expect([ticker, date], at).to.deep.equal([r.ticker, r.date]);
        expect([Number(ms), Number(ws), Number(ss)], at).to.deep.equal([r.main_street, r.wall_street, r.service_score]);
        expect(gap === '' ? null : Number(gap), at).to.equal(r.divergence_gap);
        expect(estimated, at).to.be.oneOf(['true', 'false']);
        expect(estimated === 'true', at).to.equal(r.estimated);
        expect(new Date(restatedAt!).toISOString(), at).to.equal(restatedAt);
        expect(restatedAt, at).to.equal(r.restated_at);
      }
    });

    it(`${DIVERGENCE}: every event is the read model's, field by field, open ones with empty outcome columns`, async () => {
      const docs: DivergenceEventDoc[] = await all(reads.scan(divergenceEvents));
      const expected = docs.map((e) =>
        [e.ticker, e.direction, e.flag_date, e.close_date, e.price_at_flag, e.price_at_close, e.pct_change, e.days, e.status].map(cell),
      );
      expect(data(DIVERGENCE)).to.deep.equal(expected);
      const open = data(DIVERGENCE).filter((r) => r[8] === 'open');
      expect(open.length).to.be.greaterThan(0);
      for (const r of open) expect([r[3], r[5], r[6], r[7]]).to.deep.equal(['', '', '', '']);
      expect(data(DIVERGENCE).some((r) => r[8] === 'closed')).to.equal(true);
    });

    it(`${VERSIONS}: each row's versions come together, numbered from 1, contiguous in time, the last one current and equal to the history row`, () => {
      const rows = data(VERSIONS);
      const history = new Map(buckets.flatMap((b) => b.days.map((_, i) => rowAt(b, i))).map((r) => [`${r.ticker}|${r.date}`, r]));
      const superseded = new Map(versionDocs.map((v) => [`${v.ticker}|${v.date}|${v.version}`, v]));
      const seenKeys = new Set<string>();
      let group: string[][] = [];
      let multi = 0;
      const check = (g: string[][]) => {
        const key = `${g[0]![0]}|${g[0]![1]}`;
        const at = `versions of ${key}`;
        expect(seenKeys.has(key), `${at} come in one run`).to.equal(false);
        seenKeys.add(key);
        expect(
          g.map((r) => r[2]),
          at,
        ).to.deep.equal(g.map((_, i) => String(i + 1)));
        for (let i = 0; i + 1 < g.length; i++) {
          expect(g[i]![9], `${at}: valid_to of version ${i + 1}`).to.equal(g[i + 1]![8]);
          expect(g[i]![8]! < g[i]![9]!, `${at}: version ${i + 1} is current for a while`).to.equal(true);
          const v = superseded.get(`${key}|${i + 1}`);
          expect(v, `${at}: version ${i + 1} is a score_versions document`).not.to.equal(undefined);
          expect(g[i], `${at}: version ${i + 1}`).to.deep.equal(
            [v!.ticker, v!.date, v!.version, v!.main_street, v!.wall_street, v!.service_score, gapOf(v!), v!.estimated, v!.valid_from, v!.valid_to].map(cell),
          );
        }
        const current = history.get(key)!;
        expect(current, `${at}: a history row`).not.to.equal(undefined);
        expect(g[g.length - 1], `${at}: the current one`).to.deep.equal(
          [
            current.ticker,
            current.date,
            current.version,
            current.main_street,
            current.wall_street,
            current.service_score,
            current.divergence_gap,
            current.estimated,
            current.restated_at,
            null,
          ].map(cell),
        );
        if (g.length > 1) multi++;
      };
      for (const r of rows) {
        if (group.length && (group[0]![0] !== r[0] || group[0]![1] !== r[1])) {
          check(group);
          group = [];
        }
        group.push(r);
      }
      if (group.length) check(group);

      expect(seenKeys.size).to.equal(history.size);
      expect(multi).to.be.greaterThan(0);
      // The current versions, in order, are the history file.
      expect(rows.filter((r) => r[9] === '').map((r) => `${r[0]}|${r[1]}`)).to.deep.equal(data(HISTORY).map((r) => `${r[0]}|${r[1]}`));
      expect(rows.length - history.size).to.equal(versionDocs.length);
    });

    it('reports progress per file, from nothing to every document read', async () => {
      const totals: Record<ExportName, number> = {
        [HISTORY]: buckets.length,
        [DIVERGENCE]: await reads.count(divergenceEvents, {}),
        [VERSIONS]: buckets.length + versionDocs.length,
      };
      for (const name of EXPORT_NAMES) {
        const mine = progress.filter((p) => p.name === name);
        expect(mine[0], name).to.deep.equal({ name, done: 0, total: totals[name] });
        expect(mine[mine.length - 1], name).to.deep.equal({ name, done: totals[name], total: totals[name] });
        for (let i = 1; i < mine.length; i++) expect(mine[i]!.done, name).to.be.at.least(mine[i - 1]!.done);
      }
      expect([...new Set(progress.map((p) => p.name))]).to.deep.equal([...EXPORT_NAMES]);
    });

    describe('and the read models change while a run reads its snapshot', () => {
      it('leaves out what was committed after the snapshot was taken: the files are those of the run before, byte for byte', async () => {
        const first = Object.fromEntries(written.map((f) => [f.name, f]));
        const bucket = buckets[buckets.length - 1]!;
        const version = versionDocs[0]!;
        const divergence = (await all(reads.scan(divergenceEvents)))[0]!;
        const extra: DivergenceEventDoc = { ...divergence, ticker: 'ZZZZ', flag_date: '2019-02-01' };
        const change: Write[] = [
          { op: 'delete', collection: scoreHistory.name, id: scoreHistory.key(bucket) },
          { op: 'delete', collection: scoreVersions.name, id: scoreVersions.key(version) },
          { op: 'upsert', collection: divergenceEvents.name, id: divergenceEvents.key(extra), doc: extra },
          { op: 'upsert', collection: divergenceEvents.name, id: divergenceEvents.key(divergence), doc: { ...divergence, status: 'changed' } },
        ];
        const undo: Write[] = [
          { op: 'upsert', collection: scoreHistory.name, id: scoreHistory.key(bucket), doc: bucket },
          { op: 'upsert', collection: scoreVersions.name, id: scoreVersions.key(version), doc: version },
          { op: 'delete', collection: divergenceEvents.name, id: divergenceEvents.key(extra) },
          { op: 'upsert', collection: divergenceEvents.name, id: divergenceEvents.key(divergence), doc: divergence },
        ];
        // The read store as the run sees it, except that the change is committed (and written) right after its snapshot is taken.
        let snapshots = 0;
        const changingAfterSnapshot = new Proxy(reads, {
          get(target, prop, receiver) {
            if (prop === 'snapshot') {
              return async () => {
                const view = await target.snapshot();
                snapshots++;
                await target.commit({ writes: change, checkpoints: {} });
                await target.count(scoreHistory, {}); // waits for the writer
                return view;
              };
            }
            const value = Reflect.get(target, prop, receiver) as unknown;
            return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          },
        });
        try {
          const during = await runExport({ ...store.deps, reads: changingAfterSnapshot }, { trigger: 'cli' });
          expect(snapshots).to.equal(1);
          if (during.status !== 'completed') throw new Error(during.status);
          expect(await reads.count(divergenceEvents, {}), 'the change is in the read models').to.equal(data(DIVERGENCE).length + 1);
          for (const f of during.files) {
            expect({ ...f, run_id: runId }, f.name).to.deep.equal(first[f.name]);
          }

          const after = await runExport(store.deps, { trigger: 'cli' });
          if (after.status !== 'completed') throw new Error(after.status);
          const counts = Object.fromEntries(after.files.map((f) => [f.name, f.row_count]));
          expect(counts).to.deep.equal({
            [HISTORY]: historyRows - bucket.days.length,
            [DIVERGENCE]: data(DIVERGENCE).length + 1,
            [VERSIONS]: historyRows - bucket.days.length + (await reads.count(scoreVersions, {})),
          });
          expect(after.files.find((f) => f.name === DIVERGENCE)!.sha256).not.to.equal(first[DIVERGENCE]!.sha256);
        } finally {
          await reads.commit({ writes: undo, checkpoints: {} });
        }
      });
    });
  });

  describe('When the store is empty (SCORES_DEMO=off)', () => {
    let store: Awaited<ReturnType<typeof openStore>>;
    before(async () => {
      store = await openStore({ SCORES_DEMO: 'off' });
    });
    after(() => store?.close());

    it('writes every file as exactly its header line, with a row count of 0', async () => {
      const result = await runExport(store.deps, { trigger: 'cli' });
      if (result.status !== 'completed') throw new Error(result.status);
      for (const name of EXPORT_NAMES) {
        const bytes = readFileSync(join(store.dir, 'exports', result.run_id, name));
        expect(gunzipSync(bytes).toString('utf8'), name).to.equal(`${EXPORT_COLUMNS[name].join(',')}\n`);
        const file = result.files.find((f) => f.name === name)!;
        expect(file.row_count, name).to.equal(0);
        expect(file.sha256, name).to.equal(createHash('sha256').update(bytes).digest('hex'));
        expect(file.bytes, name).to.equal(bytes.length);
      }
      const started = (await store.services.events.readStream(EXPORTS_STREAM))[0] as unknown as ExportStarted;
      expect(started.data.positions).to.deep.equal({ [scoreHistoryProjection.name]: null, [divergenceProjection.name]: null });
    });
  });

  describe('When a run is aborted or fails', () => {
    let store: Awaited<ReturnType<typeof openStore>>;
    before(async () => {
      store = await openStore();
    });
    after(() => store?.close());

    const exportsRoot = () => join(store.dir, 'exports');
    const events = async () => (await store.services.events.readStream(EXPORTS_STREAM)) as unknown as (ExportRunEvent & RecordedEvent)[];
    const state = async () => (await events()).reduce((s, e) => exportRunDecider.evolve(s, e as never), exportRunDecider.initialState());
    const lastStarted = async () => (await events()).filter((e) => e.type === 'ExportStarted').at(-1)!.data.run_id;

    /** Runs with a signal the caller aborts as it likes; checks what an aborted run must leave, and that the next run cleans up after it. */
    async function abortedRun(abortWhen: (ac: AbortController, p: ExportProgress) => void, before?: AbortController) {
      const kept = keptBundles(await state());
      const ac = before ?? new AbortController();
      let failure: unknown = null;
      try {
        await runExport(store.deps, { trigger: 'cli', signal: ac.signal, onProgress: (p) => abortWhen(ac, p) });
      } catch (err) {
        failure = err;
      }
      expect(failure, 'the run throws').to.be.instanceOf(Error);
      expect((failure as Error).name).to.equal('AbortError');
      const aborted = await lastStarted();
      expect(kept).not.to.include(aborted);

      // Nothing half-written is left, and no bundle was added.
      expect(partials(exportsRoot())).to.deep.equal([]);
      expect(keptBundles(await state())).to.deep.equal(kept);
      expect((await state()).runs.find((r) => r.run_id === aborted)!.status).to.equal('running');

      // The lock was released: the next run goes ahead, abandons the aborted one and removes what it left.
      const next = await runExport(store.deps, { trigger: 'cli' });
      expect(next.status).to.equal('completed');
      if (next.status !== 'completed') return;
      const after = await events();
      const abandoned = after.filter((e) => e.type === 'ExportAbandoned').map((e) => e.data.run_id);
      expect(abandoned).to.include(aborted);
      expect((await state()).runs.find((r) => r.run_id === aborted)!.status).to.equal('abandoned');
      expect(keptBundles(await state())[0]).to.equal(next.run_id);
      expect(await store.deps.files.runs()).to.deep.equal([...keptBundles(await state())].sort());
      expect(existsSync(join(exportsRoot(), aborted))).to.equal(false);
      return aborted;
    }

    it('throws with a signal aborted before it starts, recording nothing and taking no lock', async () => {
      const before = (await events()).length;
      const ac = new AbortController();
      ac.abort();
      let failure: unknown = null;
      try {
        await runExport(store.deps, { trigger: 'cli', signal: ac.signal });
      } catch (err) {
        failure = err;
      }
      expect((failure as Error | null)?.name).to.equal('AbortError');
      expect((await events()).length).to.equal(before);
      const lock = await store.deps.files.lock();
      expect(lock, 'the lock is free').not.to.equal(null);
      await lock!.release();
    });

    it('throws when aborted in the middle of a file, leaving no partial file', async () => {
      let seen = 0;
      await abortedRun((ac, p) => {
        if (p.name === HISTORY && p.done >= 500) {
          seen = p.done;
          ac.abort();
        }
      });
      expect(seen).to.be.at.least(500);
    });

    it('throws when aborted between files: the file written is not a bundle, and the next run removes it', async () => {
      const aborted = await abortedRun((ac, p) => {
        if (p.name === DIVERGENCE) ac.abort();
      });
      const run = (await state()).runs.find((r) => r.run_id === aborted)!;
      expect(run.files).to.deep.equal([HISTORY]);
    });

    it('answers busy, doing nothing, while another run holds the lock', async () => {
      const before = (await events()).length;
      const lock = await store.deps.files.lock();
      expect(lock).not.to.equal(null);
      try {
        expect(await runExport(store.deps, { trigger: 'cli' })).to.deep.equal({ status: 'busy' });
      } finally {
        await lock!.release();
      }
      expect((await events()).length).to.equal(before);
      expect((await runExport(store.deps, { trigger: 'cli' })).status).to.equal('completed');
    });

    it('skips, doing nothing, when a bundle completed that started at or after `unlessCompletedSince`, and runs when none did', async () => {
      const latest = keptBundles(await state())[0]!;
      const before = (await events()).length;
      const skipped = await runExport(store.deps, { trigger: 'schedule', unlessCompletedSince: NOW });
      expect(skipped).to.deep.equal({ status: 'skipped', run_id: latest });
      expect((await events()).length).to.equal(before);
      expect(partials(exportsRoot())).to.deep.equal([]);

      const later = new Date(Date.parse(NOW) + 1).toISOString();
      const ran = await runExport(store.deps, { trigger: 'schedule', unlessCompletedSince: later });
      expect(ran.status).to.equal('completed');
    });
  });

  describe('When the read models cannot give a run its snapshot', () => {
    let store: Awaited<ReturnType<typeof openStore>>;
    before(async () => {
      store = await openStore({ SCORES_DEMO: 'off' });
    });
    after(() => store?.close());
    const events = async () => store.services.events.readStream(EXPORTS_STREAM);

    it('releases the lock when the read models cannot give it a snapshot, so the next run goes ahead', async () => {
      const before = (await events()).length;
      const reads = store.services.reads;
      const unavailable = new Proxy(reads, {
        get(target, prop, receiver) {
          if (prop === 'snapshot') return () => Promise.reject(new Error('read store unavailable'));
          const value = Reflect.get(target, prop, receiver) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      let failure: unknown = null;
      try {
        await runExport({ ...store.deps, reads: unavailable }, { trigger: 'cli' });
      } catch (err) {
        failure = err;
      }
      expect((failure as Error | null)?.message).to.equal('read store unavailable');
      expect((await events()).length).to.equal(before);

      const lock = await store.deps.files.lock();
      if (lock) await lock.release();
      expect(lock, 'the run lock is free again').not.to.equal(null);
      expect((await runExport(store.deps, { trigger: 'cli' })).status).to.equal('completed');
    });
  });
});
