import { expect } from 'chai';
import { exportRunDecider, type ExportRunCommand } from '../../src/domain/exports/export-run.decider.js';
import { completedSince, keptBundles, type ExportsState } from '../../src/domain/exports/export-run.state.js';
import { deciderSpec } from '../support/decider-spec.js';
import { BUNDLES_KEPT, EXPORT_NAMES, type ExportName } from '../../src/domain/exports/export-bundle.js';
import type { ExportFileWritten, ExportRunEvent, ExportStarted } from '../../src/domain/exports/export.events.js';

// ----- fixtures ------------------------------------------------------------------------------

const T0 = '2026-11-24T22:30:00.000Z';
const LATER = '2026-11-25T22:30:00.000Z';
const [HISTORY, DIVERGENCE, VERSIONS] = EXPORT_NAMES;

const startData = (run_id: string, started_at = T0): ExportStarted['data'] => ({
  run_id,
  trigger: 'schedule',
  started_at,
  positions: { 'score-history-v2': '00000000000000000042', divergence: '00000000000000000041' },
  consistent: true,
});
const fileData = (run_id: string, name: ExportName): ExportFileWritten['data'] => ({
  run_id,
  name,
  row_count: 10,
  sha256: 'ab'.repeat(32),
  bytes: 1234,
  generated_at: T0,
});

const started = (id: string): ExportRunEvent => ({ type: 'ExportStarted', data: startData(id) });
const written = (id: string, name: ExportName): ExportRunEvent => ({ type: 'ExportFileWritten', data: fileData(id, name) });
const allWritten = (id: string) => EXPORT_NAMES.map((n) => written(id, n));
const completedEvent = (id: string): ExportRunEvent => ({ type: 'ExportCompleted', data: { run_id: id, completed_at: T0 } });
const abandoned = (id: string): ExportRunEvent => ({ type: 'ExportAbandoned', data: { run_id: id, at: T0 } });
const deleted = (id: string): ExportRunEvent => ({ type: 'ExportBundleDeleted', data: { run_id: id, at: T0 } });
/** A whole run that completed. */
const bundle = (id: string) => [started(id), ...allWritten(id), completedEvent(id)];

const fold = (...events: ExportRunEvent[][]): ExportsState =>
  events.flat().reduce((s, e) => exportRunDecider.evolve(s, e), exportRunDecider.initialState());

/** Applies what a decision produced, as the store would after appending it. */
const apply = (state: ExportsState, produced: ExportRunEvent[]): ExportsState => produced.reduce((s, e) => exportRunDecider.evolve(s, e), state);

const { decide } = exportRunDecider;
const spec = deciderSpec<ExportsState, ExportRunCommand, ExportRunEvent>(exportRunDecider);
/** Given the runs (lists of their events, in order). */
const given = (...events: ExportRunEvent[][]) => spec.given(events.flat());
const NOW = new Date(LATER);
const start = (id: string, started_at = T0): ExportRunCommand => ({ type: 'StartRun', data: startData(id, started_at) });
const record = (data: ExportFileWritten['data']): ExportRunCommand => ({ type: 'RecordFile', data });
const complete = (run_id: string): ExportRunCommand => ({ type: 'CompleteRun', run_id });

// ----- specs ---------------------------------------------------------------------------------

describe('Export runs (the `exports` stream)', () => {
  describe('When a run starts', () => {
    it('starts it on an empty stream', () => {
      given().when(start('exp_1'), NOW).then([{ type: 'ExportStarted', data: startData('exp_1') }]);
    });

    it('abandons every run still running first (their process is gone), at the new start time, and leaves the others alone', () => {
      given(bundle('exp_1'), [started('exp_2'), written('exp_2', HISTORY)], [started('exp_3'), abandoned('exp_3')], [started('exp_4')])
        .when(start('exp_5', LATER), NOW)
        .then([
        { type: 'ExportAbandoned', data: { run_id: 'exp_2', at: LATER } },
        { type: 'ExportAbandoned', data: { run_id: 'exp_4', at: LATER } },
        { type: 'ExportStarted', data: startData('exp_5', LATER) },
      ]);
    });

    it('refuses a run id the stream holds already, whatever that run became', () => {
      for (const history of [
        [started('exp_1')], // running
        bundle('exp_1'), // completed
        [started('exp_1'), abandoned('exp_1')],
        [...bundle('exp_1'), deleted('exp_1')],
      ]) {
        given(history).when(start('exp_1'), NOW).thenFails(/export run exp_1 exists already/);
      }
    });
  });

  describe('When a file of a run is written', () => {
    it('records it for a running run', () => {
      given([started('exp_1')])
        .when(record(fileData('exp_1', DIVERGENCE)), NOW)
        .then([{ type: 'ExportFileWritten', data: fileData('exp_1', DIVERGENCE) }]);
    });

    it('records each file once: the same name again is no event', () => {
      const history = given([started('exp_1'), written('exp_1', HISTORY)]);

      history.when(record(fileData('exp_1', HISTORY)), NOW).then([]);
      history.when(record({ ...fileData('exp_1', HISTORY), sha256: 'cd'.repeat(32) }), NOW).then([]);
      expect(history.when(record(fileData('exp_1', VERSIONS)), NOW).then([{ type: 'ExportFileWritten', data: fileData('exp_1', VERSIONS) }])).to.have.length(1);
    });

    it('refuses a file of a run that is not running: abandoned, completed, deleted or unknown', () => {
      const runs = given([started('exp_a'), abandoned('exp_a')], bundle('exp_c'), bundle('exp_d'), [deleted('exp_d')], [started('exp_r')]);

      runs.when(record(fileData('exp_a', HISTORY)), NOW).thenFails('export run exp_a is abandoned, not running');
      runs.when(record(fileData('exp_c', HISTORY)), NOW).thenFails('export run exp_c is completed, not running');
      runs.when(record(fileData('exp_d', HISTORY)), NOW).thenFails('export run exp_d is deleted, not running');
      runs.when(record(fileData('exp_x', HISTORY)), NOW).thenFails('export run exp_x is unknown, not running');
      expect(runs.when(record(fileData('exp_r', HISTORY)), NOW).then([{ type: 'ExportFileWritten', data: fileData('exp_r', HISTORY) }])).to.have.length(1);
    });
  });

  describe('When a run completes', () => {
    it('refuses until all three files are written, naming the missing ones', () => {
      given([started('exp_1')]).when(complete('exp_1'), NOW).thenFails(`export run exp_1 cannot complete without ${EXPORT_NAMES.join(', ')}`);
      given([started('exp_1'), written('exp_1', HISTORY), written('exp_1', VERSIONS)])
        .when(complete('exp_1'), NOW)
        .thenFails(`export run exp_1 cannot complete without ${DIVERGENCE}`);
    });

    it('completes once every file is written, in any order', () => {
      given([started('exp_1'), written('exp_1', VERSIONS), written('exp_1', HISTORY), written('exp_1', DIVERGENCE)])
        .when(complete('exp_1'), NOW)
        .then([{ type: 'ExportCompleted', data: { run_id: 'exp_1', completed_at: LATER } }]);
    });

    it('refuses a run that is not running: completed already, abandoned or unknown', () => {
      const runs = given(bundle('exp_c'), [started('exp_a'), ...allWritten('exp_a'), abandoned('exp_a')]);

      runs.when(complete('exp_c'), NOW).thenFails('export run exp_c is completed, not running');
      runs.when(complete('exp_a'), NOW).thenFails('export run exp_a is abandoned, not running');
      runs.when(complete('exp_x'), NOW).thenFails('export run exp_x is unknown, not running');
    });

    it(`keeps ${BUNDLES_KEPT} bundles: completing the fourth deletes the oldest`, () => {
      expect(BUNDLES_KEPT).to.equal(3);
      given(bundle('exp_1'), bundle('exp_2'), [started('exp_3'), ...allWritten('exp_3')])
        .when(complete('exp_3'), NOW)
        .then([{ type: 'ExportCompleted', data: { run_id: 'exp_3', completed_at: LATER } }]);

      given(bundle('exp_1'), bundle('exp_2'), bundle('exp_3'), [started('exp_4'), ...allWritten('exp_4')]).when(complete('exp_4'), NOW).then([
        { type: 'ExportCompleted', data: { run_id: 'exp_4', completed_at: LATER } },
        { type: 'ExportBundleDeleted', data: { run_id: 'exp_1', at: LATER } },
      ]);
    });

    it('counts only completed bundles: abandoned runs and deleted bundles are neither kept nor deleted again', () => {
      given(
        bundle('exp_1'),
        [started('exp_2'), abandoned('exp_2')],
        bundle('exp_3'),
        [deleted('exp_1')],
        [started('exp_4'), written('exp_4', HISTORY), abandoned('exp_4')],
        bundle('exp_5'),
        [started('exp_6'), ...allWritten('exp_6')],
      )
        // Completed before: exp_3 and exp_5 (exp_1 is deleted): with exp_6 that is three.
        .when(complete('exp_6'), NOW)
        .then([{ type: 'ExportCompleted', data: { run_id: 'exp_6', completed_at: LATER } }]);

      given(bundle('exp_1'), [deleted('exp_1')], bundle('exp_3'), bundle('exp_5'), bundle('exp_6'), [started('exp_7'), abandoned('exp_7')], [
        started('exp_8'),
        ...allWritten('exp_8'),
      ])
        .when(complete('exp_8'), NOW)
        .then([
        { type: 'ExportCompleted', data: { run_id: 'exp_8', completed_at: LATER } },
        { type: 'ExportBundleDeleted', data: { run_id: 'exp_3', at: LATER } },
      ]);
    });

    it('deletes every completed bundle beyond the newest kept ones (a crash kept some from being deleted)', () => {
      const runIds = deciderSpec<ExportsState, ExportRunCommand, ExportRunEvent>(exportRunDecider, { normalize: (e) => [e.type, e.data.run_id] });
      runIds
        .given([...bundle('exp_1'), ...bundle('exp_2'), ...bundle('exp_3'), ...bundle('exp_4'), ...bundle('exp_5'), started('exp_6'), ...allWritten('exp_6')])
        .when(complete('exp_6'), NOW)
        .then([
        ['ExportCompleted', 'exp_6'],
        ['ExportBundleDeleted', 'exp_3'],
        ['ExportBundleDeleted', 'exp_2'],
        ['ExportBundleDeleted', 'exp_1'],
      ]);
    });
  });

  describe('When asked whether a bundle completed since an instant (the nightly run of one scheduled time, once)', () => {
    const at = (id: string, started_at: string): ExportRunEvent => ({ type: 'ExportStarted', data: startData(id, started_at) });
    const done = (id: string, started_at: string) => [at(id, started_at), ...allWritten(id), completedEvent(id)];

    it('answers the newest completed run that started at or after it', () => {
      const state = fold(done('exp_1', '2026-11-23T22:30:00.000Z'), done('exp_2', '2026-11-24T22:30:00.000Z'), done('exp_3', '2026-11-24T23:10:00.000Z'));

      expect(completedSince(state, '2026-11-24T22:30:00.000Z')).to.equal('exp_3');
      expect(completedSince(state, '2026-11-23T22:30:00.000Z')).to.equal('exp_3');
      expect(completedSince(state, '2026-11-24T23:10:00.001Z')).to.equal(undefined);
    });

    it('does not count a run still running, abandoned, or a bundle deleted since', () => {
      const since = '2026-11-24T22:30:00.000Z';
      expect(completedSince(fold(), since)).to.equal(undefined);
      expect(completedSince(fold(done('exp_1', '2026-11-24T22:29:59.999Z')), since)).to.equal(undefined);
      expect(completedSince(fold([at('exp_1', since), ...allWritten('exp_1')]), since)).to.equal(undefined);
      expect(completedSince(fold([at('exp_1', since), abandoned('exp_1')]), since)).to.equal(undefined);
      expect(completedSince(fold(done('exp_1', since), [deleted('exp_1')]), since)).to.equal(undefined);
    });
  });

  describe('When asked which bundles are kept', () => {
    it('answers none on an empty stream', () => {
      expect(keptBundles(fold())).to.deep.equal([]);
    });

    it('answers the completed bundles, newest first, without running, abandoned or deleted runs', () => {
      const state = fold(bundle('exp_1'), [started('exp_2'), abandoned('exp_2')], bundle('exp_3'), bundle('exp_4'), [deleted('exp_1')], [started('exp_5')]);

      expect(keptBundles(state)).to.deep.equal(['exp_4', 'exp_3']);
    });

    it(`keeps the newest ${BUNDLES_KEPT} through a sequence of runs, one abandoned by the next`, () => {
      let state = fold();
      const kept: string[][] = [];
      for (let n = 1; n <= 6; n++) {
        const id = `exp_${n}`;
        state = apply(state, decide(state, start(id), new Date(T0)));
        if (n === 4) continue; // its process dies: the next run abandons it
        for (const name of EXPORT_NAMES) state = apply(state, decide(state, record(fileData(id, name)), new Date(T0)));
        state = apply(state, decide(state, complete(id), new Date(T0)));
        kept.push(keptBundles(state));
      }

      expect(kept).to.deep.equal([
        ['exp_1'],
        ['exp_2', 'exp_1'],
        ['exp_3', 'exp_2', 'exp_1'],
        ['exp_5', 'exp_3', 'exp_2'],
        ['exp_6', 'exp_5', 'exp_3'],
      ]);
      expect(state.runs.map((r) => [r.run_id, r.status])).to.deep.equal([
        ['exp_1', 'deleted'],
        ['exp_2', 'deleted'],
        ['exp_3', 'completed'],
        ['exp_4', 'abandoned'],
        ['exp_5', 'completed'],
        ['exp_6', 'completed'],
      ]);
    });
  });
});
