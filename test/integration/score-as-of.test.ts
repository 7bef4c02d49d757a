import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { PostgresReadStore } from '../../infra/postgresql/read-store.js';
import { latestScores, type LatestScore } from '../../projections/latest-scores/latest-scores.projection.js';
import { rowOnOrBefore, scoreHistory, scoreVersions } from '../../projections/score-history/score-history.projection.js';
import { scoreOnOrBefore } from '../../queries/shared/score-as-of.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { catchUpReadModels, seedIfEmpty } from '../../src/app/server.js';
import type { CollectionDef, Filter, FindOptions, Page, ReadStore } from '../../src/core/read-store.port.js';
import { addDays } from '../../src/domain/trading-calendar.js';
import { scoreStream, type ScoresPublished, type ScoresRestated } from '../../src/domain/scores/score.events.js';
import { CountingReadStore } from '../support/counting-read-store.js';
import { tempDir, testEnv } from '../support/server.js';

/** The demo from 2019-01-02 to the end of March 2019: three month buckets per ticker. */
const NOW = '2019-03-29T12:00:00Z';
/** Scored in January and March, not in February. */
const GAP = 'ZZGAP';
/** First scored on 2019-03-25. */
const NEW = 'ZZNEW';

/** The adapters of the engines (`npm run engines`), each tried when its variable is set, on a database or schema of its own. */
const ENGINE_STORES: { name: string; variable: string; open(url: string, name: string): { store: ReadStore; drop(): Promise<void> } }[] = [
  {
    name: 'MongoDB adapter (FerretDB under npm run engines)',
    variable: 'MONGODB_URI',
    open(url, name) {
      const store = new MongoReadStore(url, `scores_${name}`);
      return { store, drop: () => store.dropDatabase() };
    },
  },
  {
    name: 'PostgreSQL adapter',
    variable: 'POSTGRES_URL',
    open(url, name) {
      const store = new PostgresReadStore(url, { schema: name, poolMax: 2 });
      return { store, drop: () => store.dropSchema() };
    },
  },
];

/** The delayed view as it read until issue 41: the newest two buckets up to the month, by a range, a sort and a limit. */
async function scoreBefore(reads: ReadStore, latest: LatestScore, asOf: string): Promise<LatestScore | null> {
  if (latest.date <= asOf) return latest;
  const row = await rowOnOrBefore(reads, latest.ticker, asOf);
  if (!row) return null;
  const { version: _version, ...score } = row;
  return score;
}

/** Every calendar day from `start` to `end`. */
function days(start: string, end: string): string[] {
  const out: string[] = [];
  for (let d = start; d <= end; d = addDays(d, 1)) out.push(d);
  return out;
}

/** The CountingReadStore, with the filter of every `find` kept. */
class FilterLog extends CountingReadStore {
  readonly filters: Record<string, unknown>[] = [];

  override find<T>(def: CollectionDef<T>, filter: Filter<T>, options?: FindOptions<T>): Promise<Page<T>> {
    this.filters.push(filter);
    return super.find(def, filter, options);
  }
}

const row = (ticker: string, ms: number, ws: number) => ({ ticker, main_street: ms, wall_street: ws, service_score: (ms + ws) / 2, estimated: false });

/** Rows of the two made-up tickers beside the demo's (on dates the demo publishes), one of them restated. */
async function publishGapAndNewTickers(services: Services): Promise<void> {
  const gapDays = ['2019-01-02', '2019-01-30', '2019-01-31', '2019-03-05', '2019-03-06'];
  for (const [i, date] of gapDays.entries()) await publish(services, date, [row(GAP, 40 + i, 50)]);
  for (const date of ['2019-03-25', '2019-03-26']) await publish(services, date, [row(NEW, 61, 52)]);
  const restated: ScoresRestated['data'] = { date: '2019-01-31', restated_at: '2019-02-02T09:30:00.000Z', rows: [row(GAP, 45.5, 49)] };
  await services.events.append(scoreStream('2019-01-31'), [{ id: randomUUID(), type: 'ScoresRestated', data: restated }]);
}

async function publish(services: Services, date: string, rows: ReturnType<typeof row>[]): Promise<void> {
  const data: ScoresPublished['data'] = { date, published_at: `${date}T22:00:00.000Z`, rows };
  await services.events.append(scoreStream(date), [{ id: randomUUID(), type: 'ScoresPublished', data }]);
}

/**
 * Issue 41: a free key's score call read the score history with `month $lte …, sort month desc,
 * limit 2`, which FerretDB 1.x runs by decoding the whole collection. The delayed view now reads
 * the month buckets by id; it must answer exactly as before, on the demo and on the cases the demo
 * lacks (a ticker not scored for a month, one first scored after the as-of date).
 */
describe('Score as of a date (the delayed view): buckets read by id', function () {
  this.timeout(300_000);
  let dir: string;
  let services: Services;
  let reads: ReadStore;
  const tickers: string[] = [];

  before(async () => {
    dir = tempDir('scores-score-as-of-');
    services = await openServices(loadConfig(testEnv(dir, NOW)));
    await seedIfEmpty(services, { progress: false });
    await publishGapAndNewTickers(services);
    await catchUpReadModels(services, { progress: false });
    reads = services.reads;
    const restated = [...new Set((await reads.find(scoreVersions, {})).items.map((v) => v.ticker))].sort();
    tickers.push('AAPL', 'MSFT', ...restated.slice(0, 6), GAP, NEW);
  });

  after(async () => {
    await services?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Both answers for each ticker and day, as JSON (byte for byte). */
  async function compare(store: ReadStore, reference: ReadStore, dates: readonly string[]): Promise<(LatestScore | null)[]> {
    const answers: (LatestScore | null)[] = [];
    for (const ticker of tickers) {
      const latest = (await reference.get(latestScores, ticker))!;
      for (const date of dates) {
        const after = await scoreOnOrBefore(store, latest, date);
        expect(JSON.stringify(after), `${ticker} as of ${date}`).to.equal(JSON.stringify(await scoreBefore(reference, latest, date)));
        answers.push(after);
      }
    }
    return answers;
  }

  it('answers as the range read did, for every day from before the history to its end', async () => {
    const span = days('2018-12-28', '2019-03-29');
    const answers = await compare(reads, reads, span);
    const of = (ticker: string, date: string) => answers[tickers.indexOf(ticker) * span.length + span.indexOf(date)];
    // The cases are there: a restated row, the gap (January's last row through February), none
    // before a ticker's first row.
    expect(answers.some((a) => a !== null && a.restated_at !== a.published_at)).to.equal(true);
    expect(of(GAP, '2019-02-28')).to.deep.include({ date: '2019-01-31', main_street: 45.5, restated_at: '2019-02-02T09:30:00.000Z' });
    expect(of(GAP, '2019-03-04')?.date).to.equal('2019-01-31');
    expect(of(NEW, '2019-03-24')).to.equal(null);
    expect(of('AAPL', '2019-01-01')).to.equal(null);
    expect(of('AAPL', '2019-03-01')?.date).to.equal('2019-03-01');
  });

  it('reads one bucket by id for a ticker scored in the month, two across a month boundary, and filters on the ticker alone otherwise', async () => {
    const log = new FilterLog(reads);
    const aapl = (await reads.get(latestScores, 'AAPL'))!;
    const readsFor = async (latest: LatestScore, date: string) => (await log.during(() => scoreOnOrBefore(log, latest, date))).map((r) => `${r.op} ${r.collection}`);
    expect(await readsFor(aapl, '2019-03-22')).to.deep.equal(['get score_history']);
    expect(await readsFor(aapl, '2019-02-03')).to.deep.equal(['get score_history']);
    const gap = (await reads.get(latestScores, GAP))!;
    expect(await readsFor(gap, '2019-02-15')).to.deep.equal(['get score_history', 'get score_history']);
    expect(await readsFor(gap, '2019-03-04')).to.deep.equal(['get score_history', 'get score_history', 'find score_history']);
    expect(await readsFor(aapl, '2019-01-01')).to.deep.equal(['get score_history', 'get score_history', 'find score_history']);
    // What FerretDB 1.x filters in PostgreSQL: one field, one value.
    expect(log.filters).to.deep.equal([{ ticker: GAP }, { ticker: 'AAPL' }]);
  });

  for (const engine of ENGINE_STORES) {
    describe(`on the ${engine.name}`, () => {
      let opened: { store: ReadStore; drop(): Promise<void> } | null = null;

      before(async function () {
        if (!process.env[engine.variable]) this.skip();
        opened = engine.open(process.env[engine.variable]!, `score_as_of_${randomUUID().slice(0, 8)}`);
        await opened.store.register([scoreHistory, latestScores]);
        for (const def of [scoreHistory, latestScores] as CollectionDef<any>[]) {
          const docs: unknown[] = [];
          for await (const doc of reads.scan(def)) docs.push(doc);
          for (let i = 0; i < docs.length; i += 500) {
            await opened.store.commit({ writes: docs.slice(i, i + 500).map((doc) => ({ op: 'upsert', collection: def.name, id: def.key(doc), doc })), checkpoints: {} });
          }
        }
      });

      after(async () => {
        await opened?.drop();
        await opened?.store.close();
      });

      it('answers as the embedded store did, around each month boundary and the first days', async () => {
        const dates = [...days('2018-12-30', '2019-01-03'), ...days('2019-01-29', '2019-02-04'), ...days('2019-02-26', '2019-03-07'), '2019-03-24', '2019-03-26'];
        await compare(opened!.store, reads, dates);
      });
    });
  }
});
