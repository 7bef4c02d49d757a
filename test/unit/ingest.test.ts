import { expect } from 'chai';
import type { NewEvent } from '../../src/core/event-store.port.js';
import { batchOf } from '../../commands/ingest/ingest-batch.js';
import { ingestDecider, type IngestBatch, type IngestEvent, type IngestState } from '../../src/domain/scores/ingest.decider.js';
import { IngestValidationError, parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { compositeScore } from '../../src/domain/composite.js';

/** The batch's events for its first stream, decided at `now` on the state the given events of that stream fold to. */
function decideOn(batch: IngestBatch, history: NewEvent[], now: string): { events: NewEvent[]; written: number; unchanged: number } {
  const streamId = batch.streams[0]!.streamId;
  const state = history.reduce<IngestState>((s, e) => ingestDecider.evolve(s, { ...e, streamId } as IngestEvent), ingestDecider.initialState());
  const decided = ingestDecider.decide(state, batch, new Date(now));
  const d = Array.isArray(decided) ? { writes: [], result: undefined } : decided;
  return { events: d.writes?.find((w) => w.streamId === streamId)?.events ?? [], ...d.result! };
}

describe('Ingest parsing', () => {
  describe('When a CSV file has one bad row among good ones', () => {
    const csv = [
      'ticker,date,main_street,wall_street',
      'AAPL,2024-01-02,61.5,48.0',
      'MSFT,2024-01-02,55,52',
      'NVDA,2024-13-02,70,40',
      'AMZN,2024-01-02,58,51',
    ].join('\n');

    it('refuses the whole file and names the line and the reason', () => {
      expect(() => parseIngestFile(csv, 'csv')).to.throw(IngestValidationError).that.satisfies((e: IngestValidationError) => {
        expect(e.errors).to.have.length(1);
        expect(e.errors[0]!.line).to.equal(4);
        expect(e.errors[0]!.reason).to.match(/date/);
        expect(e.message).to.match(/line 4/).and.match(/nothing was written/);
        return true;
      });
    });
  });

  describe('When a JSONL file mixes row types', () => {
    const jsonl = [
      '{"type":"ticker","symbol":"zzzz","company":"Zed Corp","sector":"Industrials","size_rank":600}',
      '',
      '{"type":"score","ticker":"ZZZZ","date":"2024-01-02","main_street":50,"wall_street":40}',
      '{"type":"price","ticker":"ZZZZ","date":"2024-01-02","close":12.5}',
    ].join('\n');

    it('validates each row against its own type and upper-cases tickers', () => {
      const rows = parseIngestFile(jsonl, 'jsonl');
      expect(rows.map((r) => r.kind)).to.deep.equal(['ticker', 'score', 'price']);
      expect(rows[0]!.value).to.include({ symbol: 'ZZZZ' });
      expect(rows[1]!.line).to.equal(3);
    });

    it('names a line that is not JSON and one whose type is unknown', () => {
      try {
        parseIngestFile('{"type":"score"\n{"type":"weather","x":1}\n', 'jsonl');
        expect.fail('should have thrown');
      } catch (e) {
        const err = e as IngestValidationError;
        expect(err.errors.map((x) => x.line)).to.deep.equal([1, 2]);
        expect(err.errors[0]!.reason).to.match(/not valid JSON/);
        expect(err.errors[1]!.reason).to.match(/unknown row type "weather"/);
      }
    });

    it('refuses scores outside 0-100 and tickers longer than 12 characters', () => {
      expect(() => parseIngestFile('{"type":"score","ticker":"AAPL","date":"2024-01-02","main_street":101,"wall_street":40}', 'jsonl')).to.throw(
        /main_street/,
      );
      expect(() => parseIngestFile('{"type":"score","ticker":"ABCDEFGHIJKLM","date":"2024-01-02","main_street":1,"wall_street":4}', 'jsonl')).to.throw(
        /12 characters/,
      );
    });

    it('refuses a relationship or a signal kind outside the closed sets the API declares as enums, in JSONL and CSV', () => {
      const relationships = /relationship must be one of core, supplier, beneficiary, adjacent, headwind/;
      expect(() => parseIngestFile('{"type":"theme","slug":"ai","name":"AI","strength":50,"constituents":[{"ticker":"AAPL","relationship":"partner"}]}', 'jsonl')).to.throw(
        /must be one of core, supplier/,
      );
      expect(() => parseIngestFile('slug,name,description,strength,constituents\nai,AI,x,50,AAPL:core;TSM:partner\n', 'csv')).to.throw(relationships);
      expect(() => parseIngestFile('{"type":"signal","id":1,"alert_type":"macro","content":"c","tickers":[],"themes":[],"created_at":"2024-01-02T00:00:00Z"}', 'jsonl')).to.throw(
        /alert_type.*must be one of divergence_alert, demand_surge/,
      );
      const ok = parseIngestFile('slug,name,description,strength,constituents\nai,AI,x,50,AAPL:core;TSM:supplier\n', 'csv');
      expect((ok[0]!.value as { constituents: unknown[] }).constituents).to.deep.equal([
        { ticker: 'AAPL', relationship: 'core' },
        { ticker: 'TSM', relationship: 'supplier' },
      ]);
    });
  });
});

describe('Ingest decisions', () => {
  const rows = parseIngestFile(
    ['ticker,date,main_street,wall_street', 'AAPL,2024-01-02,60,50', 'MSFT,2024-01-02,55,52'].join('\n'),
    'csv',
  );
  const known = new Set(['AAPL', 'MSFT']);
  const now = '2024-01-03T10:00:00.000Z';

  describe('When the date has no scores yet', () => {
    it('publishes every row with the composite computed by the service', () => {
      const { batch, errors } = batchOf(rows, known);
      expect(errors).to.be.empty;
      expect(batch.streams.map((s) => s.streamId)).to.deep.equal(['scores-2024-01-02']);
      const out = decideOn(batch, [], now);
      expect(out.events).to.have.length(1);
      expect(out.events[0]!.type).to.equal('ScoresPublished');
      const data = out.events[0]!.data as { published_at: string; rows: { ticker: string; service_score: number }[] };
      expect(data.published_at).to.equal(now);
      expect(data.rows[0]!.service_score).to.equal(compositeScore(60, 50));
    });
  });

  describe('When the same rows are ingested again', () => {
    it('writes nothing', () => {
      const { batch } = batchOf(rows, known);
      const first = decideOn(batch, [], now);
      const again = decideOn(batch, first.events, now);
      expect(again.events).to.be.empty;
      expect(again.unchanged).to.equal(2);
    });
  });

  describe('When one value changed', () => {
    it('restates only that row, at the ingest time', () => {
      const history = decideOn(batchOf(rows, known).batch, [], now).events;
      const changed = parseIngestFile(['ticker,date,main_street,wall_street', 'AAPL,2024-01-02,61,50', 'MSFT,2024-01-02,55,52'].join('\n'), 'csv');
      const later = '2024-01-05T09:00:00.000Z';
      const out = decideOn(batchOf(changed, known).batch, history, later);
      expect(out.events).to.have.length(1);
      expect(out.events[0]!.type).to.equal('ScoresRestated');
      expect(out.events[0]!.data).to.deep.include({ restated_at: later, date: '2024-01-02' });
      expect((out.events[0]!.data as { rows: { ticker: string }[] }).rows.map((r) => r.ticker)).to.deep.equal(['AAPL']);
    });
  });

  describe('When a score names a ticker nobody listed, or a row repeats', () => {
    it('reports both with their lines', () => {
      const bad = parseIngestFile(
        ['ticker,date,main_street,wall_street', 'AAPL,2024-01-02,60,50', 'XYZQ,2024-01-02,1,2', 'AAPL,2024-01-02,61,50'].join('\n'),
        'csv',
      );
      const { errors } = batchOf(bad, known);
      expect(errors.map((e) => e.line).sort()).to.deep.equal([3, 4]);
      expect(errors.find((e) => e.line === 3)!.reason).to.match(/not listed/);
      expect(errors.find((e) => e.line === 4)!.reason).to.match(/duplicates line 2/);
    });
  });

  describe('When a row says it was published after the clock', () => {
    it('refuses it with its line: it would be served before its publication time', () => {
      const future = parseIngestFile(
        ['ticker,date,main_street,wall_street,published_at', 'AAPL,2024-01-02,60,50,2024-01-02T22:00:00Z', 'MSFT,2024-01-03,55,52,2024-01-03T22:00:00Z'].join('\n'),
        'csv',
      );
      expect(batchOf(future, known, now).errors).to.deep.equal([
        { line: 3, reason: 'published_at 2024-01-03T22:00:00.000Z is after the clock (2024-01-03T10:00:00.000Z): a row cannot be published in the future' },
      ]);
      expect(batchOf(future, known, '2024-01-03T22:00:00.000Z').errors).to.be.empty;
    });
  });
});
