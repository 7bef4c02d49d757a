import { expect } from 'chai';
import type { RequestLogStore, RequestRecord } from '../../src/core/request-log.port.js';

export interface RequestLogFixture {
  store: RequestLogStore;
  /** The same store opened again (another process's view, or after a restart). */
  reopen(): Promise<RequestLogStore>;
  cleanup(): Promise<void>;
}

const T0 = Date.parse('2026-03-01T00:00:00Z');
let serial = 0;

/** A request id as the service makes them: `req_` and 16 base64url characters. */
const requestId = (n: number) => `req_${Buffer.from(`call-${String(n).padStart(7, '0')}`).toString('base64url').slice(0, 16).padEnd(16, 'A')}`;

function call(overrides: Partial<RequestRecord> = {}): RequestRecord {
  serial++;
  return {
    request_id: requestId(serial),
    account_id: 'acct_a',
    key_id: 'key_a1',
    at: T0 + serial * 1000,
    channel: 'rest',
    operation: 'scores',
    tool: null,
    method: 'GET',
    path: '/v1/scores/{ticker}',
    status: 200,
    code: null,
    credits: 2,
    latency_ms: 3.4,
    ...overrides,
  };
}

const ids = (rows: RequestRecord[]) => rows.map((r) => r.request_id);

/** What every request-log store must do, whatever holds it. */
export function requestLogContract(name: string, open: () => Promise<RequestLogFixture>): void {
  describe(`The request log on ${name}`, function () {
    this.timeout(60_000);
    let f: RequestLogFixture;
    beforeEach(async () => {
      f = await open();
    });
    afterEach(() => f.cleanup());

    it('gives back every field of a call as appended, newest first, and only the account asked for', async () => {
      const mine = [call(), call({ channel: 'mcp', operation: 'history', tool: 'get_score_history', method: 'POST', path: '/mcp/http', status: 403, code: 'tier', credits: 0, latency_ms: 12.5 }), call({ status: 499, code: null, credits: 7 })];
      const theirs = call({ account_id: 'acct_b', key_id: 'key_b1' });
      await f.store.append([...mine, theirs]);
      const listed = await f.store.list({ account_id: 'acct_a', limit: 10 });
      expect(listed).to.deep.equal([...mine].reverse());
      expect(await f.store.list({ account_id: 'acct_b', limit: 10 })).to.deep.equal([theirs]);
      expect(await f.store.list({ account_id: 'acct_nobody', limit: 10 })).to.deep.equal([]);
    });

    it('pages with `after` through calls of the same millisecond, each once, in one order', async () => {
      const same = Array.from({ length: 7 }, () => call({ at: T0 }));
      await f.store.append([...same, call({ at: T0 - 1 })]);
      const seen: RequestRecord[] = [];
      let after: { at: number; request_id: string } | undefined;
      for (;;) {
        const page = await f.store.list({ account_id: 'acct_a', limit: 3, after });
        if (page.length === 0) break;
        seen.push(...page);
        after = { at: page.at(-1)!.at, request_id: page.at(-1)!.request_id };
      }
      expect(seen).to.have.length(8);
      expect(new Set(ids(seen)).size).to.equal(8);
      expect(seen.at(-1)!.at).to.equal(T0 - 1);
      expect(ids(seen)).to.deep.equal(ids(await f.store.list({ account_id: 'acct_a', limit: 100 })));
    });

    it('filters by key, status class, operation, request id and a span of time', async () => {
      const rows = [call(), call({ key_id: 'key_a2' }), call({ status: 429, code: 'rate_limited', credits: 0 }), call({ operation: 'screener', path: '/v1/screener' }), call({ status: 500, code: 'internal' }), call({ channel: 'mcp', operation: 'screener', tool: 'screen_stocks', method: 'POST', path: '/mcp/http' })];
      await f.store.append(rows);
      const q = (more: object) => f.store.list({ account_id: 'acct_a', limit: 100, ...more }).then(ids);
      expect(await q({ key_ids: ['key_a2'] })).to.deep.equal([rows[1]!.request_id]);
      expect(await q({ key_ids: ['key_a2', 'key_unknown'] })).to.deep.equal([rows[1]!.request_id]);
      expect(await q({ key_ids: ['key_unknown'] })).to.deep.equal([]);
      expect(await q({ key_ids: [] })).to.deep.equal([]);
      expect(await q({ status_class: 4 })).to.deep.equal([rows[2]!.request_id]);
      expect(await q({ status_class: 5 })).to.deep.equal([rows[4]!.request_id]);
      expect(await q({ operation: 'screener' })).to.deep.equal([rows[5]!.request_id, rows[3]!.request_id]);
      expect(await q({ operation: 'divergence' })).to.deep.equal([]);
      expect(await q({ request_id: rows[3]!.request_id })).to.deep.equal([rows[3]!.request_id]);
      expect(await f.store.list({ account_id: 'acct_b', request_id: rows[3]!.request_id, limit: 10 })).to.deep.equal([]);
      expect(await q({ from: rows[2]!.at, to: rows[4]!.at })).to.deep.equal([rows[3]!.request_id, rows[2]!.request_id]);
    });

    it('prunes what is older than the cut-off and, of an account over its bound, its oldest calls; others untouched', async () => {
      const old = [call({ at: T0 - 10_000 }), call({ at: T0 - 9_000 })];
      const a = Array.from({ length: 5 }, (_, i) => call({ at: T0 + i }));
      const b = [call({ account_id: 'acct_b', at: T0 - 5000 }), call({ account_id: 'acct_b', at: T0 + 9 })];
      await f.store.append([...old, ...a, ...b]);
      expect(await f.store.prune(T0 - 1000, 3)).to.equal(2 + 2 + 1);
      expect(ids(await f.store.list({ account_id: 'acct_a', limit: 100 }))).to.deep.equal(ids(a.slice(2).reverse()));
      expect(ids(await f.store.list({ account_id: 'acct_b', limit: 100 }))).to.deep.equal(ids([b[1]!]));
      expect(await f.store.prune(T0 - 1000, 3)).to.equal(0);
    });

    it("forgets one account's calls and no other's, and keeps what it holds across a reopening", async () => {
      await f.store.append([call(), call(), call({ account_id: 'acct_b' })]);
      expect(await f.store.forget('acct_a')).to.equal(2);
      expect(await f.store.forget('acct_a')).to.equal(0);
      expect(await f.store.list({ account_id: 'acct_a', limit: 10 })).to.deep.equal([]);
      const again = await f.reopen();
      expect(await again.list({ account_id: 'acct_b', limit: 10 })).to.have.length(1);
      const size = await again.size();
      expect(size.rows).to.equal(1);
      expect(size.bytes).to.be.greaterThan(0);
    });

    it('keeps a request id of another form as it was given', async () => {
      const odd = call({ request_id: 'req_short' });
      await f.store.append([odd]);
      expect(await f.store.list({ account_id: 'acct_a', request_id: 'req_short', limit: 1 })).to.deep.equal([odd]);
    });
  });
}
