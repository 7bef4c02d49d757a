import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { SqliteReadStore } from '../../infra/sqlite/read-store.js';
import { CachedReadStore } from '../../src/core/cached-read-store.js';
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { entitlementsOf } from '../../src/domain/plans.js';
import { scoreDates } from '../../projections/daily-scores/daily-scores.projection.js';
import { tickers, type TickerDoc } from '../../projections/reference/reference.projection.js';
import { VisibilityCache } from '../../queries/shared/visibility.js';
import { tempDir } from '../support/server.js';

interface Quote {
  ticker: string;
  price: number;
  tags: string[];
}
const quotes = defineCollection<Quote>({ name: 'quotes', key: (d) => d.ticker, fields: ['ticker'], indexes: [] });
const notes = defineCollection<{ id: string; text: string }>({ name: 'notes', key: (d) => d.id, fields: [], indexes: [] });

const event = (type: string): RecordedEvent => ({
  id: type,
  streamId: 's',
  type,
  data: {},
  metadata: {},
  revision: 0,
  position: '1',
  recordedAt: '2024-01-02T00:00:00Z',
});

describe('Query caches', () => {
  let dir: string;
  let db: SqliteDb;
  let store: SqliteReadStore;

  beforeEach(async () => {
    dir = tempDir('scores-caches-');
    db = openSqlite(join(dir, 'scores.sqlite'), { synchronous: 'NORMAL' });
    store = new SqliteReadStore(db);
    await store.register([quotes, notes, scoreDates, tickers]);
  });

  afterEach(async () => {
    await store.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A write as the projector runner makes it: straight to the store, not through the cache. */
  const project = (collection: string, id: string, doc: unknown) =>
    store.commit({ writes: [{ op: 'upsert', collection, id, doc }], checkpoints: {} });

  describe('CachedReadStore', () => {
    let cached: CachedReadStore;
    beforeEach(async () => {
      cached = new CachedReadStore(store, [{ def: quotes, eventTypes: ['QuoteChanged'] }]);
      await project('quotes', 'AAPL', { ticker: 'AAPL', price: 1, tags: ['a'] });
      await project('notes', 'n', { id: 'n', text: 'one' });
    });

    it('serves a cached collection from memory until an event its projection handles is committed', async () => {
      expect(await cached.get(quotes, 'AAPL')).to.deep.include({ price: 1 });
      await project('quotes', 'AAPL', { ticker: 'AAPL', price: 2, tags: [] });
      expect(await cached.get(quotes, 'AAPL'), 'before the batch is reported').to.deep.include({ price: 1 });
      cached.invalidate([event('SomethingElse')]);
      expect(await cached.get(quotes, 'AAPL'), 'after an unrelated batch').to.deep.include({ price: 1 });
      cached.invalidate([event('QuoteChanged')]);
      expect(await cached.get(quotes, 'AAPL')).to.deep.include({ price: 2 });
    });

    it('reads other collections from the store every time', async () => {
      expect(await cached.get(notes, 'n')).to.deep.equal({ id: 'n', text: 'one' });
      await project('notes', 'n', { id: 'n', text: 'two' });
      expect(await cached.get(notes, 'n')).to.deep.equal({ id: 'n', text: 'two' });
    });

    it('does not keep a read that overlapped an invalidation', async () => {
      const overlapping = cached.get(quotes, 'AAPL');
      await project('quotes', 'AAPL', { ticker: 'AAPL', price: 3, tags: [] });
      cached.invalidate([event('QuoteChanged')]);
      await overlapping;
      expect(await cached.get(quotes, 'AAPL')).to.deep.include({ price: 3 });
    });

    it('answers getMany from the same cache, leaving out unknown ids', async () => {
      const many = await cached.getMany(quotes, ['AAPL', 'NOPE']);
      expect([...many.keys()]).to.deep.equal(['AAPL']);
      expect(many.get('AAPL')).to.equal(await cached.get(quotes, 'AAPL'));
    });

    it('hands out frozen documents, so a query cannot change what the next caller reads', async () => {
      const doc = (await cached.get(quotes, 'AAPL'))!;
      expect(() => {
        doc.price = 99;
      }).to.throw(TypeError);
      expect(() => doc.tags.push('b')).to.throw(TypeError);
    });

    it('drops everything on a commit or reset made through it', async () => {
      await cached.get(quotes, 'AAPL');
      await cached.commit({ writes: [{ op: 'upsert', collection: 'quotes', id: 'AAPL', doc: { ticker: 'AAPL', price: 4, tags: [] } }], checkpoints: {} });
      expect(await cached.get(quotes, 'AAPL')).to.deep.include({ price: 4 });
      await cached.reset(['quotes'], []);
      expect(await cached.get(quotes, 'AAPL')).to.equal(null);
    });
  });

  describe('VisibilityCache', () => {
    const paid = entitlementsOf('quant', false);
    const free = entitlementsOf('free', false);
    const now = new Date('2024-01-10T12:00:00Z');
    const listed = (symbol: string, size_rank: number) => ({ symbol, size_rank }) as TickerDoc;

    beforeEach(async () => {
      await project('score_dates', '2024-01-02', { date: '2024-01-02' });
      await project('score_dates', '2024-01-09', { date: '2024-01-09' });
      await project('tickers', 'AAPL', listed('AAPL', 1));
    });

    it('computes each plan shape once, and again only after invalidate()', async () => {
      const cache = new VisibilityCache(store);
      const first = await cache.get(paid, now);
      expect(first.asOf).to.equal('2024-01-09');
      expect(await cache.get(paid, now)).to.equal(first);
      const delayed = await cache.get(free, now);
      expect(delayed).to.not.equal(first);
      expect(delayed.asOf).to.equal('2024-01-02');
      expect([...delayed.universe!]).to.deep.equal(['AAPL']);

      await project('score_dates', '2024-01-10', { date: '2024-01-10' });
      await project('tickers', 'MSFT', listed('MSFT', 2));
      expect((await cache.get(paid, now)).asOf, 'not yet told').to.equal('2024-01-09');
      cache.invalidate();
      expect((await cache.get(paid, now)).asOf).to.equal('2024-01-10');
      expect([...(await cache.get(free, now)).universe!].sort()).to.deep.equal(['AAPL', 'MSFT']);
    });

    it('keys by day: tomorrow is computed afresh', async () => {
      const cache = new VisibilityCache(store);
      const today = await cache.get(paid, now);
      const tomorrow = await cache.get(paid, new Date('2024-01-11T12:00:00Z'));
      expect(tomorrow).to.not.equal(today);
      expect(tomorrow.today).to.equal('2024-01-11');
    });
  });
});
