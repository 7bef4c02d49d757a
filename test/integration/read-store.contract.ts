import { expect } from 'chai';
import { AppError } from '../../src/core/errors.js';
import {
  checkpointsOf,
  defineCollection,
  type CollectionDef,
  type Filter,
  type Page,
  type ReadSnapshot,
  type ReadStore,
  type SortSpec,
  type Write,
} from '../../src/core/read-store.port.js';

export interface ReadStoreFixture {
  store: ReadStore;
  cleanup(): Promise<void>;
}

/** A read-model row with every kind of queryable value: strings, numbers, booleans, nulls. */
interface Row {
  id: string;
  ticker: string;
  date: string;
  score: number;
  active: boolean;
  sector: string | null;
  /** Not queryable: only stored and returned. */
  detail?: { reasons: string[]; weight: number | null };
}

const rows = defineCollection<Row>({
  name: 'contract_rows',
  key: (r) => r.id,
  fields: ['ticker', 'date', 'score', 'active', 'sector'],
  indexes: [['ticker', 'date'], ['score'], ['sector', 'score']],
});

const others = defineCollection<{ id: string; n: number }>({
  name: 'contract_others',
  key: (r) => r.id,
  fields: ['n'],
  indexes: [],
});

/** 14 rows: ties on every sort field, nulls in `sector`, both booleans. */
const DATA: Row[] = [
  { id: 'r01', ticker: 'AAPL', date: '2024-01-02', score: 70, active: true, sector: 'Tech' },
  { id: 'r02', ticker: 'AAPL', date: '2024-01-03', score: 55.5, active: false, sector: 'Tech' },
  { id: 'r03', ticker: 'AAPL', date: '2024-01-04', score: 70, active: true, sector: 'Tech' },
  { id: 'r04', ticker: 'MSFT', date: '2024-01-02', score: 40, active: true, sector: 'Tech' },
  { id: 'r05', ticker: 'MSFT', date: '2024-01-03', score: 90, active: false, sector: null },
  { id: 'r06', ticker: 'XOM', date: '2024-01-02', score: 10, active: true, sector: 'Energy' },
  { id: 'r07', ticker: 'XOM', date: '2024-01-03', score: -5, active: true, sector: 'Energy' },
  { id: 'r08', ticker: 'JPM', date: '2024-01-02', score: 70, active: false, sector: 'Finance' },
  { id: 'r09', ticker: 'JPM', date: '2024-01-03', score: 0, active: true, sector: null },
  { id: 'r10', ticker: 'KO', date: '2024-01-02', score: 33, active: true, sector: 'Staples', detail: { reasons: ['a', 'b'], weight: null } },
  { id: 'r11', ticker: 'KO', date: '2024-01-03', score: 33, active: false, sector: null },
  { id: 'r12', ticker: 'BRK.B', date: '2024-01-02', score: 61, active: true, sector: 'Finance' },
  { id: 'r13', ticker: 'ÅBB', date: '2024-01-02', score: 12.25, active: false, sector: 'Industrials' },
  { id: 'r14', ticker: 'AAPL', date: '2024-01-05', score: 99, active: true, sector: 'Tech' },
];

const upsert = (doc: Row): Write => ({ op: 'upsert', collection: rows.name, id: doc.id, doc });

export interface ReadStoreContractOptions {
  /** What the adapter's snapshots say of themselves (`ReadSnapshot.consistent`), when it is known in advance. */
  snapshotConsistent?: boolean;
}

/** One behaviour spec for every ReadStore adapter. Each test gets an empty store. */
export function readStoreContract(name: string, make: () => Promise<ReadStoreFixture>, options: ReadStoreContractOptions = {}): void {
  describe(`ReadStore contract: ${name}`, function () {
    let fixture: ReadStoreFixture;
    let store: ReadStore;

    beforeEach(async function () {
      fixture = await make();
      store = fixture.store;
      await store.register([rows, others]);
    });

    afterEach(async function () {
      await fixture.cleanup();
    });

    const seed = () => store.commit({ writes: DATA.map(upsert), checkpoints: {} });
    const ids = (docs: { id: string }[]) => docs.map((d) => d.id);
    const idsOf = async (filter: Filter<Row>) => ids((await store.find(rows, filter)).items);
    /** The reference answer, computed here: filter, then sort with the id as last key. */
    const expected = (keep: (r: Row) => boolean, sort: SortSpec<Row> = []) =>
      DATA.filter(keep)
        .sort((a, b) => {
          for (const [f, d] of [...sort, ['id', 1] as const]) {
            const c = compare(a[f], b[f]);
            if (c !== 0) return c * d;
          }
          return 0;
        })
        .map((r) => r.id);

    describe('When collections are registered', function () {
      it('can register them again without harm', async function () {
        await seed();
        await store.register([rows, others]);
        expect(await store.count(rows, {})).to.equal(DATA.length);
      });
    });

    describe('When documents are written through commit', function () {
      it('reads one back exactly as written, booleans and nulls included', async function () {
        await seed();

        expect(await store.get(rows, 'r10')).to.deep.equal(DATA[9]);
        const r05 = await store.get(rows, 'r05');
        expect(r05).to.deep.equal(DATA[4]);
        expect(r05!.active).to.equal(false);
        expect(r05!.sector).to.equal(null);
      });

      it('keeps nested keys with dots, dollars and percent signs (a map keyed by ticker: BRK.B)', async function () {
        const doc = { ...DATA[0]!, detail: { reasons: [], weight: 1 }, by_ticker: { 'BRK.B': '2019-03-28', $cash: 1, '50%': { 'a.b.c': [{ '$x.y': 2 }] }, '%2E': 3 } };
        await store.commit({ writes: [{ op: 'upsert', collection: rows.name, id: 'r01', doc }], checkpoints: {} });

        expect(await store.get(rows, 'r01')).to.deep.equal(doc);
        expect((await store.find(rows, { ticker: 'AAPL' })).items.find((r) => r.id === 'r01')).to.deep.equal(doc);
      });

      it('answers null for an id it does not hold', async function () {
        expect(await store.get(rows, 'nope')).to.equal(null);
      });

      it('replaces the whole document on a second upsert', async function () {
        await seed();
        const changed: Row = { id: 'r10', ticker: 'KO', date: '2024-01-02', score: 34, active: false, sector: null };
        await store.commit({ writes: [upsert(changed)], checkpoints: {} });

        expect(await store.get(rows, 'r10')).to.deep.equal(changed);
        expect(await store.count(rows, { score: 34 })).to.equal(1);
        expect(await store.count(rows, { score: 33 })).to.equal(1);
      });

      it('deletes a document', async function () {
        await seed();
        await store.commit({ writes: [{ op: 'delete', collection: rows.name, id: 'r01' }], checkpoints: {} });

        expect(await store.get(rows, 'r01')).to.equal(null);
        expect(await store.count(rows, {})).to.equal(DATA.length - 1);
      });

      it('applies the writes of a batch in order (the last write of an id wins)', async function () {
        await store.commit({
          writes: [upsert(DATA[0]!), { op: 'delete', collection: rows.name, id: 'r01' }, upsert(DATA[1]!), upsert({ ...DATA[1]!, score: 1 })],
          checkpoints: {},
        });

        expect(await store.get(rows, 'r01')).to.equal(null);
        expect((await store.get(rows, 'r02'))!.score).to.equal(1);
      });

      it('fetches several by id, leaving out the ones it does not hold', async function () {
        await seed();
        const found = await store.getMany(rows, ['r03', 'nope', 'r09']);

        expect([...found.keys()].sort()).to.deep.equal(['r03', 'r09']);
        expect(found.get('r09')).to.deep.equal(DATA[8]);
        expect((await store.getMany(rows, [])).size).to.equal(0);
      });
    });

    describe('When filtering', function () {
      beforeEach(seed);

      it('matches a plain value and $eq', async function () {
        expect(await idsOf({ ticker: 'AAPL' })).to.deep.equal(expected((r) => r.ticker === 'AAPL'));
        expect(await idsOf({ score: { $eq: 70 } })).to.deep.equal(['r01', 'r03', 'r08']);
      });

      it('matches booleans', async function () {
        expect(await idsOf({ active: false })).to.deep.equal(expected((r) => !r.active));
        expect(await idsOf({ active: { $eq: true } })).to.deep.equal(expected((r) => r.active));
      });

      it('compares with $gt, $gte, $lt and $lte, on numbers and strings', async function () {
        expect(await idsOf({ score: { $gt: 70 } })).to.deep.equal(expected((r) => r.score > 70));
        expect(await idsOf({ score: { $gte: 70 } })).to.deep.equal(expected((r) => r.score >= 70));
        expect(await idsOf({ score: { $lt: 10 } })).to.deep.equal(expected((r) => r.score < 10));
        expect(await idsOf({ score: { $lte: 10 } })).to.deep.equal(expected((r) => r.score <= 10));
        expect(await idsOf({ date: { $gte: '2024-01-03', $lt: '2024-01-05' } })).to.deep.equal(
          expected((r) => r.date >= '2024-01-03' && r.date < '2024-01-05'),
        );
      });

      it('matches a list with $in, and nothing with an empty list', async function () {
        expect(await idsOf({ ticker: { $in: ['KO', 'XOM'] } })).to.deep.equal(expected((r) => ['KO', 'XOM'].includes(r.ticker)));
        expect(await idsOf({ ticker: { $in: [] } })).to.deep.equal([]);
      });

      it('excludes a value with $ne', async function () {
        expect(await idsOf({ ticker: { $ne: 'AAPL' } })).to.deep.equal(expected((r) => r.ticker !== 'AAPL'));
      });

      it('combines conditions on several fields with AND', async function () {
        expect(await idsOf({ ticker: 'AAPL', active: true, score: { $gte: 70, $lte: 90 } })).to.deep.equal(['r01', 'r03']);
      });

      it('matches everything with an empty filter', async function () {
        expect(await idsOf({})).to.deep.equal(expected(() => true));
      });
    });

    describe('When a filter compares with null', function () {
      beforeEach(seed);

      it('matches nulls with a plain null', async function () {
        expect(await idsOf({ sector: null })).to.deep.equal(['r05', 'r09', 'r11']);
      });

      it('matches nulls with $eq: null, as with a plain null', async function () {
        expect(await idsOf({ sector: { $eq: null } })).to.deep.equal(['r05', 'r09', 'r11']);
      });

      it('matches every non-null value with $ne: null', async function () {
        expect(await idsOf({ sector: { $ne: null } })).to.deep.equal(expected((r) => r.sector !== null));
      });

      it('keeps nulls with $ne on a value (null is not that value)', async function () {
        expect(await idsOf({ sector: { $ne: 'Tech' } })).to.deep.equal(expected((r) => r.sector !== 'Tech'));
      });

      it('matches nulls listed in $in', async function () {
        expect(await idsOf({ sector: { $in: ['Energy', null] } })).to.deep.equal(
          expected((r) => r.sector === 'Energy' || r.sector === null),
        );
      });
    });

    describe('When sorting', function () {
      beforeEach(seed);

      it('orders by id when no sort is given', async function () {
        expect(ids((await store.find(rows, {})).items)).to.deep.equal(expected(() => true));
      });

      it('orders ascending and descending, ties broken by id', async function () {
        for (const sort of [[['score', 1]], [['score', -1]], [['date', -1]]] as SortSpec<Row>[]) {
          expect(ids((await store.find(rows, {}, { sort })).items), JSON.stringify(sort)).to.deep.equal(expected(() => true, sort));
        }
      });

      it('orders by several fields in mixed directions', async function () {
        const sort: SortSpec<Row> = [
          ['ticker', 1],
          ['date', -1],
        ];
        expect(ids((await store.find(rows, {}, { sort })).items)).to.deep.equal(expected(() => true, sort));
        const sort2: SortSpec<Row> = [
          ['active', -1],
          ['score', 1],
        ];
        expect(ids((await store.find(rows, {}, { sort: sort2 })).items)).to.deep.equal(expected(() => true, sort2));
      });

      it('puts nulls first ascending and last descending', async function () {
        const asc = ids((await store.find(rows, {}, { sort: [['sector', 1]] })).items);
        const desc = ids((await store.find(rows, {}, { sort: [['sector', -1]] })).items);

        expect(asc.slice(0, 3)).to.deep.equal(['r05', 'r09', 'r11']);
        expect(desc.slice(-3)).to.deep.equal(['r05', 'r09', 'r11']);
        expect(asc).to.deep.equal(expected(() => true, [['sector', 1]]));
        expect(desc).to.deep.equal(expected(() => true, [['sector', -1]]));
      });
    });

    describe('When paging with limit and cursor', function () {
      beforeEach(seed);

      /** Follows nextCursor to the end, returning the pages' ids. */
      const walk = async (filter: Filter<Row>, sort: SortSpec<Row> | undefined, limit: number) => {
        const pages: string[][] = [];
        let cursor: string | null = null;
        do {
          const page: Page<Row> = await store.find(rows, filter, { ...(sort ? { sort } : {}), limit, cursor });
          pages.push(ids(page.items));
          cursor = page.nextCursor;
          if (pages.length > DATA.length + 1) throw new Error('pagination does not end');
        } while (cursor);
        return pages;
      };

      const cases: [string, Filter<Row>, SortSpec<Row> | undefined][] = [
        ['no sort (id order)', {}, undefined],
        ['one field ascending, with ties', {}, [['score', 1]]],
        ['one field descending, with ties', {}, [['score', -1]]],
        ['two fields in mixed directions', {}, [['ticker', 1], ['date', -1]]],
        ['a boolean then a number descending', {}, [['active', 1], ['score', -1]]],
        ['a filter and a sort', { date: { $lte: '2024-01-03' } }, [['date', -1], ['score', 1]]],
      ];
      for (const [label, filter, sort] of cases) {
        it(`walks every page with no duplicate and no gap: ${label}`, async function () {
          const all = ids((await store.find(rows, filter, sort ? { sort } : {})).items);
          for (const limit of [1, 3, 5]) {
            const pages = await walk(filter, sort, limit);
            expect(pages.flat(), `limit ${limit}`).to.deep.equal(all);
            for (const p of pages.slice(0, -1)) expect(p).to.have.length(limit);
          }
        });
      }

      for (const dir of [1, -1] as const) {
        it(`walks every page when the sort field holds nulls (${dir === 1 ? 'ascending' : 'descending'})`, async function () {
          const sort: SortSpec<Row> = [['sector', dir]];
          const all = expected(() => true, sort);
          for (const limit of [1, 2, 4]) {
            expect((await walk({}, sort, limit)).flat(), `limit ${limit}`).to.deep.equal(all);
          }
        });
      }

      it('gives no cursor on the last page, even when it is exactly full', async function () {
        const filter: Filter<Row> = { ticker: 'AAPL' }; // 4 rows
        const first = await store.find(rows, filter, { limit: 2 });
        const second = await store.find(rows, filter, { limit: 2, cursor: first.nextCursor });

        expect(first.nextCursor).to.be.a('string');
        expect(ids(second.items)).to.deep.equal(['r03', 'r14']);
        expect(second.nextCursor).to.equal(null);
        expect((await store.find(rows, filter, { limit: 10 })).nextCursor).to.equal(null);
      });

      it('refuses a cursor it did not make with a bad request', async function () {
        for (const cursor of ['not a cursor!', Buffer.from('{"a":1}').toString('base64url'), Buffer.from('[1]').toString('base64url')]) {
          const err = await failureOf(() => store.find(rows, {}, { sort: [['score', 1]], limit: 2, cursor }));
          expect(err, cursor).to.be.instanceOf(AppError);
          expect((err as AppError).code).to.equal('bad_request');
        }
      });
    });

    describe('When counting', function () {
      it('counts what a filter matches', async function () {
        expect(await store.count(rows, {})).to.equal(0);
        await seed();

        expect(await store.count(rows, {})).to.equal(DATA.length);
        expect(await store.count(rows, { ticker: 'AAPL', active: true })).to.equal(3);
        expect(await store.count(rows, { score: { $gt: 1000 } })).to.equal(0);
      });
    });

    describe('When scanning a collection', function () {
      it('yields every document once, in id order, across batches', async function () {
        await seed();
        const seen: Row[] = [];
        for await (const doc of store.scan(rows, 4)) seen.push(doc);

        expect(ids(seen)).to.deep.equal([...DATA.map((r) => r.id)].sort());
        expect(seen.find((r) => r.id === 'r10')).to.deep.equal(DATA[9]);
      });

      it('yields nothing for an empty collection', async function () {
        const seen: unknown[] = [];
        for await (const doc of store.scan(others)) seen.push(doc);
        expect(seen).to.deep.equal([]);
      });
    });

    describe('When a projector commits with its checkpoint', function () {
      it('has no checkpoint before its first commit', async function () {
        expect(await store.checkpoint('scores')).to.equal(null);
      });

      it('stores the checkpoint with the writes', async function () {
        await store.commit({ writes: [upsert(DATA[0]!)], checkpoints: { scores: '00000000000000000005', usage: '00000000000000000003' } });

        expect(await store.checkpoint('scores')).to.equal('00000000000000000005');
        expect(await store.checkpoint('usage')).to.equal('00000000000000000003');
        expect(await store.get(rows, 'r01')).to.deep.equal(DATA[0]);
      });

      it('reads several projectors\' checkpoints at once, null for one without', async function () {
        await store.commit({ writes: [], checkpoints: { scores: '00000000000000000005', usage: '00000000000000000003' } });

        expect(await checkpointsOf(store, ['usage', 'none', 'scores'])).to.deep.equal(['00000000000000000003', null, '00000000000000000005']);
        if (store.checkpoints) expect([...(await store.checkpoints(['scores', 'none']))]).to.deep.equal([['scores', '00000000000000000005']]);
      });

      it('keeps neither the writes nor the checkpoint of a batch that fails', async function () {
        await store.commit({ writes: [upsert(DATA[0]!)], checkpoints: { scores: '00000000000000000001' } });

        const err = await failureOf(() =>
          store.commit({
            writes: [upsert({ ...DATA[0]!, score: 1 }), upsert(DATA[1]!), { op: 'upsert', collection: 'not_registered', id: 'x', doc: {} }],
            checkpoints: { scores: '00000000000000000002' },
          }),
        );

        expect(err).to.be.instanceOf(Error);
        expect(await store.checkpoint('scores')).to.equal('00000000000000000001');
        expect(await store.get(rows, 'r01')).to.deep.equal(DATA[0]);
        expect(await store.get(rows, 'r02')).to.equal(null);
      });

      it('moves checkpoints with a batch that writes nothing, forward only', async function () {
        await store.commit({ writes: [upsert(DATA[0]!)], checkpoints: { scores: '00000000000000000005' } });

        await store.commit({ writes: [], checkpoints: { scores: '00000000000000000009', usage: '00000000000000000002' } });
        await store.commit({ writes: [], checkpoints: { scores: '00000000000000000007' } });

        expect(await store.checkpoint('scores')).to.equal('00000000000000000009');
        expect(await store.checkpoint('usage')).to.equal('00000000000000000002');
        expect(await store.get(rows, 'r01')).to.deep.equal(DATA[0]);
      });

      it('ignores a re-delivered batch whose checkpoint is not newer than the stored one', async function () {
        const v1 = { ...DATA[0]!, score: 1 };
        const v2 = { ...DATA[0]!, score: 2 };
        await store.commit({ writes: [upsert(v2)], checkpoints: { scores: '00000000000000000010' } });

        await store.commit({ writes: [upsert(v1), upsert(DATA[1]!)], checkpoints: { scores: '00000000000000000007' } });
        await store.commit({ writes: [upsert(v1)], checkpoints: { scores: '00000000000000000010' } });

        expect(await store.get(rows, 'r01')).to.deep.equal(v2);
        expect(await store.get(rows, 'r02')).to.equal(null);
        expect(await store.checkpoint('scores')).to.equal('00000000000000000010');
      });
    });

    describe('When read models are reset', function () {
      it('drops the named collections and checkpoints only, and the collections stay usable', async function () {
        await seed();
        await store.commit({
          writes: [{ op: 'upsert', collection: others.name, id: 'o1', doc: { id: 'o1', n: 1 } }],
          checkpoints: { scores: '00000000000000000009', usage: '00000000000000000004' },
        });

        await store.reset([rows.name], ['scores']);

        expect(await store.count(rows, {})).to.equal(0);
        expect(await store.get(others, 'o1')).to.deep.equal({ id: 'o1', n: 1 });
        expect(await store.checkpoint('scores')).to.equal(null);
        expect(await store.checkpoint('usage')).to.equal('00000000000000000004');
        await seed();
        expect(await idsOf({ ticker: 'KO' })).to.deep.equal(['r10', 'r11']);
      });
    });

    describe('When reading from a snapshot', function () {
      const all = async <T>(docs: AsyncIterable<T>): Promise<T[]> => {
        const out: T[] = [];
        for await (const d of docs) out.push(d);
        return out;
      };
      const sorted = (docs: Row[]) => [...docs].sort((a, b) => compare(a.id, b.id));
      let open: ReadSnapshot[] = [];
      const snapshot = async () => {
        const snap = await store.snapshot();
        open.push(snap);
        return snap;
      };
      afterEach(async function () {
        for (const snap of open) await snap.close();
        open = [];
      });

      it(`says whether it is one commit${options.snapshotConsistent === undefined ? '' : ` (${name}: ${options.snapshotConsistent})`}`, async function () {
        const snap = await snapshot();
        expect(snap.consistent).to.be.a('boolean');
        if (options.snapshotConsistent !== undefined) expect(snap.consistent).to.equal(options.snapshotConsistent);
      });

      it('sees every document committed before it, whole, in id order, whatever the batch size', async function () {
        await seed();
        const snap = await snapshot();

        for (const batch of [1, 4, 14, 1000]) expect(await all(snap.scan(rows, batch)), `batch ${batch}`).to.deep.equal(sorted(DATA));
        expect(await all(snap.scan(others))).to.deep.equal([]);
      });

      it('does not see documents added, replaced or deleted after it was taken, scan after scan, while the store does', async function () {
        await seed();
        const snap = await snapshot();
        const added: Row = { id: 'r15', ticker: 'NEW', date: '2024-01-06', score: 1, active: true, sector: null };
        await store.commit({
          writes: [
            upsert(added),
            upsert({ ...DATA[0]!, score: -1 }),
            { op: 'delete', collection: rows.name, id: 'r02' },
            { op: 'upsert', collection: others.name, id: 'o1', doc: { id: 'o1', n: 1 } },
          ],
          checkpoints: {},
        });
        const now = sorted([...DATA.filter((r) => r.id !== 'r02' && r.id !== 'r01'), added, { ...DATA[0]!, score: -1 }]);
        expect(await all(store.scan(rows))).to.deep.equal(now);

        if (snap.consistent) {
          for (const batch of [1, 3, 1000]) expect(await all(snap.scan(rows, batch)), `batch ${batch}`).to.deep.equal(sorted(DATA));
          expect(await all(snap.scan(others))).to.deep.equal([]);
        } else {
          // A view that is not one commit is the live data.
          expect(await all(snap.scan(rows))).to.deep.equal(now);
        }
      });

      it('keeps its view within one scan while commits land between its batches', async function () {
        await seed();
        const snap = await snapshot();
        const scan = snap.scan(rows, 2)[Symbol.asyncIterator]();
        const seen: Row[] = [];
        for (let i = 0; i < 3; i++) seen.push((await scan.next()).value as Row);
        // Delete everything still to come, replace what was seen, add before and after.
        await store.commit({
          writes: [
            ...sorted(DATA)
              .slice(3)
              .map((r): Write => ({ op: 'delete', collection: rows.name, id: r.id })),
            ...seen.map((r) => upsert({ ...r, score: 0 })),
            upsert({ ...DATA[0]!, id: 'r00' }),
            upsert({ ...DATA[0]!, id: 'r99' }),
          ],
          checkpoints: {},
        });
        for (let next = await scan.next(); !next.done; next = await scan.next()) seen.push(next.value);

        if (snap.consistent) expect(seen).to.deep.equal(sorted(DATA));
        else expect(ids(seen).slice(0, 3).concat(ids(seen).slice(-1))).to.deep.equal(['r01', 'r02', 'r03', 'r99']);
        expect(await store.count(rows, {})).to.equal(5);
      });

      it('answers the checkpoints as they were when it was taken', async function () {
        await store.commit({ writes: [upsert(DATA[0]!)], checkpoints: { scores: '00000000000000000005' } });
        const snap = await snapshot();
        await store.commit({ writes: [upsert(DATA[1]!)], checkpoints: { scores: '00000000000000000007', usage: '00000000000000000002' } });

        expect(await store.checkpoint('scores')).to.equal('00000000000000000007');
        if (snap.consistent) {
          expect(await snap.checkpoint('scores')).to.equal('00000000000000000005');
          expect(await snap.checkpoint('usage')).to.equal(null);
          expect(ids(await all(snap.scan(rows)))).to.deep.equal(['r01']);
        } else {
          expect(await snap.checkpoint('scores')).to.equal('00000000000000000007');
        }
        expect(await snap.checkpoint('never')).to.equal(null);
      });

      it('is the commit its checkpoints name: two snapshots apart see their own documents', async function () {
        await store.commit({ writes: [upsert(DATA[0]!)], checkpoints: { scores: '00000000000000000001' } });
        const first = await snapshot();
        await store.commit({ writes: [upsert(DATA[1]!)], checkpoints: { scores: '00000000000000000002' } });
        const second = await snapshot();
        await store.commit({ writes: [upsert(DATA[2]!)], checkpoints: { scores: '00000000000000000003' } });
        if (!first.consistent) return;

        expect([await first.checkpoint('scores'), ids(await all(first.scan(rows)))]).to.deep.equal(['00000000000000000001', ['r01']]);
        expect([await second.checkpoint('scores'), ids(await all(second.scan(rows)))]).to.deep.equal(['00000000000000000002', ['r01', 'r02']]);
      });

      it('closes, and the store goes on serving reads, writes and new snapshots', async function () {
        await seed();
        const snap = await store.snapshot();
        expect(ids(await all(snap.scan(rows, 5)))).to.have.length(DATA.length);
        await snap.close();

        await store.commit({ writes: [{ op: 'delete', collection: rows.name, id: 'r14' }], checkpoints: { scores: '00000000000000000009' } });
        expect(await store.count(rows, {})).to.equal(DATA.length - 1);
        expect(await store.get(rows, 'r14')).to.equal(null);
        expect((await store.find(rows, { ticker: 'KO' })).items).to.have.length(2);
        expect(await all(store.scan(rows))).to.have.length(DATA.length - 1);
        const again = await snapshot();
        expect(ids(await all(again.scan(rows)))).to.deep.equal(expected((r) => r.id !== 'r14'));
        expect(await again.checkpoint('scores')).to.equal('00000000000000000009');
      });
    });

    describe('When a reader follows a write watermark (the sync cursor of GET /v1/scores/history)', function () {
      // A projector commits batches in order; batch n writes documents numbered n (`score`),
      // rewrites one shared document, and writes a watermark document saying n last. A reader that
      // reads the watermark first and then finds by number must see every document of batches up
      // to it, whatever commits land in between: that is what makes the cursor miss nothing.
      it('finds every document committed with or before a watermark read first, while commits land', async function () {
        const BATCHES = 30;
        const doc = (id: string, n: number): Row => ({ id, ticker: 'SYNC', date: '2024-01-02', score: n, active: true, sector: null });
        const heads: number[] = [];
        const check = async () => {
          const head = (await store.get(others, 'head'))?.n ?? 0;
          const byId = new Map((await store.find(rows, { score: { $gt: 0 } })).items.map((r) => [r.id, r.score]));
          for (let n = 1; n <= head; n++) {
            expect(byId.get(`w${n}a`), `w${n}a after watermark ${head}`).to.equal(n);
            expect(byId.get(`w${n}b`), `w${n}b after watermark ${head}`).to.equal(n);
          }
          if (head > 0) expect(byId.get('shared')).to.be.at.least(head);
          heads.push(head);
        };
        for (let n = 1; n <= BATCHES; n++) {
          const committing = store.commit({
            writes: [upsert(doc(`w${n}a`, n)), upsert(doc(`w${n}b`, n)), upsert(doc('shared', n)), { op: 'upsert', collection: others.name, id: 'head', doc: { id: 'head', n } }],
            checkpoints: { sync: String(n).padStart(20, '0') },
          });
          // Reads while the commit is in flight (SQLite: handed to its writer thread, not written yet), then after it.
          await Promise.all([check(), committing]);
          await check();
        }
        expect(heads).to.have.length(2 * BATCHES);
        expect(heads.at(-1)).to.equal(BATCHES);
        expect(await store.count(rows, { score: { $gt: 0 } })).to.equal(2 * BATCHES + 1);
      });
    });

    describe('When a query names a field the collection does not declare', function () {
      beforeEach(seed);
      const undeclared = rows as unknown as CollectionDef<Row & { detail: string }>;

      it('refuses it in a filter', async function () {
        expect(await failureOf(() => store.find(undeclared, { detail: 'x' }))).to.be.instanceOf(Error);
        expect(await failureOf(() => store.count(undeclared, { id: 'r01' }))).to.be.instanceOf(Error);
      });

      it('refuses it in a sort', async function () {
        expect(await failureOf(() => store.find(undeclared, {}, { sort: [['detail', 1]] }))).to.be.instanceOf(Error);
      });
    });
  });
}

/** The failure of an operation, whether it throws at once or rejects. */
async function failureOf(op: () => Promise<unknown>): Promise<unknown> {
  try {
    await op();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure, but it succeeded');
}

/** Nulls first, then the natural order of numbers, booleans (false < true) and strings (code points). */
function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return -1;
  if (b === null || b === undefined) return 1;
  if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
  return (a as number) < (b as number) ? -1 : 1;
}
