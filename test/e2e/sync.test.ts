import { expect } from 'chai';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { scoreHistorySeq } from '../../projections/score-history/score-history.projection.js';
import { getMultiTickerHistory } from '../../queries/get-multi-ticker-history/get-multi-ticker-history.query.js';
import { decodeSyncCursor, encodeSyncCursor } from '../../queries/get-multi-ticker-history/sync-cursor.js';
import { visibilityFor } from '../../queries/shared/visibility.js';
import type { fixedClock } from '../../src/core/clock.js';
import { PLANS, entitlementsOf, type Tier } from '../../src/domain/plans.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';

/**
 * The sync cursor of GET /v1/scores/history (`next_since`) over real HTTP and the real ingest path,
 * with the clock pinned: every ingest of the test happens in the same second, so every restatement
 * and every new row carries the same `restated_at` as the polls around it.
 */
const NOW = '2024-03-01T12:00:00Z';
const SAME_SECOND = '2024-03-01 12:00:00';

interface Row {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
  restated_at: string;
}
interface Version {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
}
const versionKey = (v: Version) => `${v.ticker}|${v.date}|${v.main_street}|${v.wall_street}`;
const rowKey = (v: { ticker: string; date: string }) => `${v.ticker}|${v.date}`;
const credits = (r: { headers: Headers }) => Number(r.headers.get('x-credits-remaining'));

/** The weekdays from `from` to `to`, inclusive. */
function weekdays(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += 86_400_000) {
    const d = new Date(t);
    if (d.getUTCDay() !== 0 && d.getUTCDay() !== 6) out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

async function startServer(): Promise<TestServer> {
  return startTestServer({ now: NOW, env: { SCORES_DEMO: 'off' } });
}

async function freshKey(server: TestServer, tier: Tier): Promise<string> {
  const issued = await createAccountWithKey(server.services, { tier, email: `${tier}-${Math.random()}@example.test` });
  await server.services.runner.waitForHead();
  return issued.key;
}

/** Writes score rows through the real ingest path (a JSONL file), as `scores ingest` does. */
async function ingest(server: TestServer, rows: (Version & { published_at?: string })[]): Promise<string | null> {
  const text = rows.map((r) => JSON.stringify({ type: 'score', ...r })).join('\n');
  const written = await ingestRows(server.services.events, server.services.clock, parseIngestFile(text, 'jsonl'));
  return written.position;
}

async function listTickers(server: TestServer, symbols: string[]): Promise<void> {
  const text = symbols.map((s, i) => JSON.stringify({ type: 'ticker', symbol: s, company: `${s} Inc.`, sector: 'Tech', size_rank: i + 1 })).join('\n');
  const written = await ingestRows(server.services.events, server.services.clock, parseIngestFile(text, 'jsonl'));
  await server.services.runner.waitFor(written.position!);
}

describe('Incremental sync with next_since', function () {
  this.timeout(180_000);
  let server: TestServer;
  const get = (path: string, key: string) => getJson(`${server.url}${path}`, key);

  before(async () => {
    server = await startServer();
  });
  after(() => server.stop());

  describe('When rows are written between and during 20 polls, in the same second as each poll', () => {
    const TICKERS = Array.from({ length: 12 }, (_, i) => `S${String(i).padStart(2, '0')}`);
    const DATES = weekdays('2024-01-02', '2024-02-29');
    /** When each row was last written: the round (0 = before the first poll). */
    const touched = new Map<string, number>();
    /** Every version written, in order; `superseded` ones were replaced before any poll could see them. */
    const written: Version[] = [];
    const superseded = new Set<string>();
    const backdated: Version[] = [];
    let n = 0;
    /** A value not written before: each version of each row is told apart by its scores. */
    const fresh = () => {
      n++;
      return { main_street: (100 + (n % 800)) / 10, wall_street: 20 + Math.floor(n / 800) };
    };
    const unused: Version[] = [];
    for (const date of DATES) for (const ticker of TICKERS) unused.push({ ticker, date, main_street: 0, wall_street: 0 });

    /** New rows: the next unused ticker and date pairs. */
    const newRows = (count: number, round: number): Version[] =>
      unused.splice(0, count).map((r) => {
        const v = { ticker: r.ticker, date: r.date, ...fresh() };
        touched.set(rowKey(v), round);
        return v;
      });
    /** Restatements of rows no write of this round or the one before touched (so no version is superseded unseen). */
    const restatements = (count: number, round: number): Version[] => {
      const free = [...touched].filter(([, r]) => r < round - 1).map(([key]) => key);
      const picked = free.filter((_, i) => i % 7 === round % 7).slice(0, count);
      return picked.map((key) => {
        const [ticker, date] = key.split('|') as [string, string];
        touched.set(key, round);
        return { ticker, date, ...fresh() };
      });
    };

    let key: string;
    let pastKey: string;
    const polls: { status: number; count: number; credits: number; rows: Row[]; next: string; more: boolean }[] = [];
    const pastPolls: Row[][] = [];
    const AS_KNOWN_AT = '2024-02-15T00:00:00Z';
    /** Run by the next read of the history rows, before it: a write that lands in the middle of a poll. */
    let duringRead: (() => Promise<void>) | null = null;
    const landedMidRead: { round: number; during: Version[] }[] = [];
    let unhook = () => {};

    after(() => unhook());

    before(async () => {
      // The store the queries read through, observed (not replaced): its own find runs every read.
      const reads = server.services.reads;
      const find = reads.find.bind(reads);
      reads.find = async (def, filter, options) => {
        if (def.name === 'score_history' && duringRead) {
          const hook = duringRead;
          duringRead = null;
          await hook();
        }
        return find(def, filter, options);
      };
      unhook = () => void Reflect.deleteProperty(reads, 'find');

      await listTickers(server, TICKERS);
      key = await freshKey(server, 'quant');
      pastKey = await freshKey(server, 'quant');
      const initial = newRows(36, 0);
      written.push(...initial);
      await server.services.runner.waitFor((await ingest(server, initial))!);

      const poll = async (since: string | null) => {
        const r = await get(`/v1/scores/history${since ? `?since=${since}` : ''}`, key);
        const result = { status: r.status, count: r.body.count, credits: credits(r), rows: r.body.rows as Row[], next: r.body.next_since as string, more: r.body.has_more };
        polls.push(result);
        return result;
      };
      let pastSince: string | null = null;
      const pastPoll = async () => {
        const r = await get(`/v1/scores/history?as_known_at=${AS_KNOWN_AT}${pastSince ? `&since=${pastSince}` : ''}`, pastKey);
        expect(r.status).to.equal(200);
        pastPolls.push(r.body.rows);
        pastSince = r.body.next_since;
      };

      let since = (await poll(null)).next;
      await pastPoll();
      for (let round = 1; round <= 20; round++) {
        // Between polls: new rows (one published at an earlier instant, as a source may say), restatements.
        const between = [...newRows(2, round), ...restatements(2, round)];
        const old = { ...between[0]!, published_at: `${between[0]!.date}T23:00:00Z` };
        backdated.push(between[0]!);
        written.push(...between);
        let position = await ingest(server, [old, ...between.slice(1)]);
        if (round === 5) {
          // A row restated twice before the next poll: only its latest value is delivered.
          const [again] = restatements(1, round);
          const latest = { ...again!, ...fresh() };
          await ingest(server, [again!]);
          position = await ingest(server, [latest]);
          superseded.add(versionKey(again!));
          written.push(again!, latest);
        }
        await server.services.runner.waitFor(position!);
        if (round === 20) {
          await server.services.runner.waitForHead();
          since = (await poll(since)).next;
        } else {
          // During the poll: more rows and restatements, ingested while the request is in flight.
          const during = [...newRows(2, round), ...restatements(2, round)];
          written.push(...during);
          if (round % 3 === 0) {
            // Applied to the read model after the poll read its write sequence, before it reads rows.
            duringRead = async () => server.services.runner.waitFor((await ingest(server, during))!);
            since = (await poll(since)).next;
            landedMidRead.push({ round, during });
          } else {
            const inFlight = poll(since);
            await new Promise((resolve) => setTimeout(resolve, round % 3));
            await ingest(server, during);
            since = (await inFlight).next;
          }
        }
        await pastPoll();
      }
      await server.services.runner.waitForHead();
    });

    it('answers every poll 200 with a next_since and no pending page', () => {
      expect(polls).to.have.length(21);
      for (const p of polls) {
        expect(p.status).to.equal(200);
        expect(p.next).to.match(/^c1_[A-Za-z0-9_-]+$/);
        expect(p.more).to.equal(false);
      }
    });

    it('gives a row written while a poll reads to the next poll, not to that one', () => {
      expect(landedMidRead.length).to.equal(6);
      for (const { round, during } of landedMidRead) {
        const keys = (i: number) => new Set(polls[i]!.rows.map(versionKey));
        expect(during.filter((v) => keys(round).has(versionKey(v))), `poll ${round}`).to.deep.equal([]);
        expect(during.filter((v) => !keys(round + 1).has(versionKey(v))), `poll ${round + 1}`).to.deep.equal([]);
      }
    });

    it('writes the rows in the same second as the polls', () => {
      const later = polls.slice(1).flatMap((p) => p.rows);
      expect(later.length).to.be.greaterThan(100);
      // All of them, but the rows a source published earlier (at 23:00 of their date).
      const backdatedKeys = new Set(backdated.map(versionKey));
      for (const r of later) expect(r.restated_at, versionKey(r)).to.equal(backdatedKeys.has(versionKey(r)) ? `${r.date} 23:00:00` : SAME_SECOND);
    });

    it('delivers every row version written exactly once: never twice, never missed', () => {
      const delivered = new Map<string, number>();
      for (const r of polls.flatMap((p) => p.rows)) delivered.set(versionKey(r), (delivered.get(versionKey(r)) ?? 0) + 1);
      const expected = written.filter((v) => !superseded.has(versionKey(v))).map(versionKey);
      expect(new Set(expected).size).to.equal(expected.length);
      expect([...delivered.entries()].filter(([, count]) => count > 1), 'delivered twice').to.deep.equal([]);
      expect(expected.filter((k) => !delivered.has(k)), 'missed').to.deep.equal([]);
      expect([...delivered.keys()].filter((k) => !expected.includes(k)), 'never written, or superseded before any poll').to.deep.equal([]);
    });

    it('leaves the client copy, upserted by ticker and date, equal to the server history', async () => {
      const copy = new Map<string, Row>();
      for (const r of polls.flatMap((p) => p.rows)) copy.set(rowKey(r), r);
      const full = await get('/v1/scores/history', key);
      expect(full.body.count).to.equal(copy.size);
      for (const r of full.body.rows as Row[]) expect(copy.get(rowKey(r))).to.deep.equal(r);
    });

    it('bills each row once: the credits charged equal the rows delivered', () => {
      let remaining = PLANS.quant.monthly_allowance!;
      for (const p of polls) {
        remaining -= p.count;
        expect(p.credits).to.equal(remaining);
      }
      expect(PLANS.quant.monthly_allowance! - polls.at(-1)!.credits).to.equal(polls.reduce((sum, p) => sum + p.rows.length, 0));
    });

    it('with as_known_at, delivers each row of that vintage once: a restatement made after the instant changes nothing', () => {
      const delivered = pastPolls.flat();
      // Only the rows a source published before the instant, each with its first value.
      expect(delivered.map(versionKey).sort()).to.deep.equal(backdated.map(versionKey).sort());
      for (const r of delivered) expect(r.restated_at).to.equal(`${r.date} 23:00:00`);
    });
  });

  describe('When the change set after a cursor is larger than one call returns', () => {
    it('comes in pages whose next_since continues it: each row once, a row written meanwhile after the last page', async () => {
      // One symbol the prefix of another: pages follow the answer's order (ticker, then date).
      const tickers = ['PG', 'PG.A', 'PGB'];
      await listTickers(server, tickers);
      const start = decodeSyncCursor((await get('/v1/scores/history?start=2030-01-01', await freshKey(server, 'quant'))).body.next_since);
      const rows = tickers.flatMap((ticker, i) => weekdays('2024-02-01', '2024-02-07').map((date, d) => ({ ticker, date, main_street: 30 + i, wall_street: 40 + d })));
      await server.services.runner.waitFor((await ingest(server, rows))!);
      const v = await visibilityFor(server.services.reads, entitlementsOf('quant', false), server.services.clock.now());
      const pages: { rows: string[]; more: boolean }[] = [];
      let cursor = start;
      for (let i = 0; i < 10; i++) {
        const page = await getMultiTickerHistory(server.services.reads, v, { tickers, cursor }, 4);
        pages.push({ rows: page.rows.map((r) => rowKey(r)), more: page.more });
        if (i === 1) {
          // Written between two pages: not in this change set, in the next one.
          await server.services.runner.waitFor((await ingest(server, [{ ticker: 'PG', date: '2024-02-01', main_street: 99, wall_street: 1 }]))!);
        }
        cursor = decodeSyncCursor(encodeSyncCursor(page.next));
        if (!page.more) break;
      }
      expect(pages.map((p) => p.rows.length)).to.deep.equal([4, 4, 4, 3]);
      expect(pages.map((p) => p.more)).to.deep.equal([true, true, true, false]);
      // The first page held PG 2024-02-01; it was restated meanwhile: the next call brings the new value, once.
      expect(pages.flatMap((p) => p.rows).sort()).to.deep.equal(rows.map(rowKey).sort());
      const after = await getMultiTickerHistory(server.services.reads, v, { tickers, cursor }, 4);
      expect(after.rows.map((r) => [rowKey(r), r.main_street])).to.deep.equal([['PG|2024-02-01', 99]]);
      expect(after.more).to.equal(false);
    });
  });

  describe('When the cursor is not one this service can continue from', () => {
    it('refuses an altered or cut cursor, and one ahead of the data, with 400 cursor_invalid naming since; a plain since still works', async () => {
      const key = await freshKey(server, 'quant');
      const good = (await get('/v1/scores/history?start=2030-01-01', key)).body.next_since as string;
      const head = await scoreHistorySeq(server.services.reads);
      const ahead = encodeSyncCursor({ from: { seq: head + 1000, end: '2024-03-01' } });
      const r0 = await get(`/v1/scores/history?since=${good}`, key);
      expect(r0.status).to.equal(200);
      for (const since of [good.slice(0, -3), `${good}AA`, 'c1_', 'c1_not-a-cursor', ahead]) {
        const r = await get(`/v1/scores/history?since=${since}`, key);
        expect(r.status, since).to.equal(400);
        expect(r.body.code, since).to.equal('cursor_invalid');
        expect(r.body.errors[0].parameter).to.equal('since');
        expect(r.body.detail).to.contain('next_since');
      }
      const plain = await get(`/v1/scores/history?since=${encodeURIComponent(SAME_SECOND)}&start=2030-01-01`, key);
      expect(plain.status).to.equal(200);
      expect(plain.body.since).to.equal(SAME_SECOND);
      expect((await get('/v1/scores/history?since=yesterday', key)).body.code).to.equal('bad_request');
    });
  });

  describe('The OpenAPI document', () => {
    it('declares next_since, has_more and as_known_at on the multi-ticker history, with the loop explained', async () => {
      const doc = (await getJson(`${server.url}/openapi.json`)).body;
      const ref: string = doc.paths['/v1/scores/history'].get.responses['200'].content['application/json'].schema.$ref;
      const schema = doc.components.schemas[ref.split('/').at(-1)!];
      expect(schema.required).to.include.members(['next_since', 'has_more', 'as_known_at']);
      expect(schema.properties.next_since.type).to.equal('string');
      expect(schema.properties.next_since.description).to.contain('send it back as `since`').and.contain('exactly once');
      expect(schema.properties.has_more.type).to.equal('boolean');
      const operation = doc.paths['/v1/scores/history'].get.description as string;
      expect(operation).to.contain('next_since').and.contain('never twice and never missed');
    });
  });
});

describe('Incremental sync on the free tier (7 days behind)', function () {
  this.timeout(120_000);
  let server: TestServer;
  const get = (path: string, key: string) => getJson(`${server.url}${path}`, key);

  before(async () => {
    server = await startServer();
  });
  after(() => server.stop());

  it('delivers each row once, when its date reaches the as-of date, with its value then', async () => {
    const tickers = ['FA', 'FB'];
    await listTickers(server, tickers);
    const key = await freshKey(server, 'free');
    // Before any score exists: an empty answer, whose next_since the loop starts from.
    const empty = await get('/v1/scores/history', key);
    expect(empty.body).to.include({ count: 0, as_of: null, end: null, has_more: false });
    const dates = weekdays('2024-02-19', '2024-03-01');
    const value = (ticker: string, date: string, bump = 0) => ({ ticker, date, main_street: 20 + dates.indexOf(date) + bump, wall_street: ticker === 'FA' ? 30 : 31 });
    await server.services.runner.waitFor((await ingest(server, tickers.flatMap((t) => dates.map((d) => value(t, d)))))!);

    const clock = server.services.clock as ReturnType<typeof fixedClock>;
    const seen: { as_of: string; rows: Row[] }[] = [];
    let since: string = empty.body.next_since;
    for (let day = 0; day <= 8; day++) {
      clock.set(new Date(Date.parse(NOW) + day * 86_400_000));
      if (day === 2) {
        // A visible row restated, and a row not visible yet restated before it enters the window.
        await server.services.runner.waitFor((await ingest(server, [value('FA', '2024-02-20', 50), value('FB', '2024-02-29', 50)]))!);
      }
      const r = await get(`/v1/scores/history?since=${since}`, key);
      expect(r.status).to.equal(200);
      seen.push({ as_of: r.body.as_of, rows: r.body.rows });
      expect(r.body.end).to.equal(r.body.as_of);
      since = r.body.next_since;
    }
    // The as-of date trails the clock by 7 days: 2024-02-23 on Friday 03-01, 2024-03-01 on Saturday 03-09.
    expect(seen.map((s) => s.as_of)).to.deep.equal([
      '2024-02-23', '2024-02-23', '2024-02-23', '2024-02-26', '2024-02-27', '2024-02-28', '2024-02-29', '2024-03-01', '2024-03-01',
    ]);
    const all = seen.flatMap((s) => s.rows);
    expect(all.map(rowKey).sort()).to.deep.equal(
      [...tickers.flatMap((t) => dates.map((d) => `${t}|${d}`)), 'FA|2024-02-20'].sort(),
    );
    // Each poll brings the dates that entered the window, and the restatement of a visible row once.
    expect(seen[3]!.rows.map(rowKey)).to.deep.equal(['FA|2024-02-26', 'FB|2024-02-26']);
    expect(seen[2]!.rows.map((r) => [rowKey(r), r.main_street])).to.deep.equal([['FA|2024-02-20', 71]]);
    const fb29 = all.filter((r) => rowKey(r) === 'FB|2024-02-29');
    expect(fb29.map((r) => r.main_street)).to.deep.equal([20 + dates.indexOf('2024-02-29') + 50]);
    expect(seen.at(-1)!.rows).to.deep.equal([]);
  });
});
