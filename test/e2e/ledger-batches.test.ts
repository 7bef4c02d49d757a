import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { createAccountWithKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { auditAccount } from '../../queries/audit-ledger/audit-ledger.query.js';
import { auditMonth, exportLedger } from '../../queries/audit-ledger/ledger-month.query.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';

/** The recipe of docs/ledger.md, written independently of the service's code. */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
    .join(',')}}`;
}
const hashOf = (e: { kind: string; prev_hash: string; data: Record<string, unknown> }) => {
  const { hash: _h, ...rest } = e.data;
  return createHash('sha256').update(`${e.prev_hash}\n${e.kind}\n${canonical(rest)}`).digest('hex');
};

interface Line {
  seq: number;
  kind: string;
  request_id: string | null;
  prev_hash: string;
  hash: string;
  data: Record<string, unknown>;
}

/**
 * Calls of one key that arrive together are charged in one append, stored as one
 * `CreditsDebitedBatch` event; the customer still sees, and verifies, one line per call.
 */
describe('Concurrent calls of one key, charged as one batch', function () {
  this.timeout(120_000);
  const CALLS = 60;
  let server: TestServer;
  let account: string;
  let key: string;
  const answered: string[] = [];

  before(async () => {
    server = await startTestServer({ now: '2019-03-15T12:00:00Z' });
    ({ account_id: account, key } = await createAccountWithKey(server.services, { tier: 'hobbyist' }));
    // 60 calls at once are above a hobbyist key's burst: the rate is lifted, the batching is the point here.
    await setRateLimit(server.services, account, 'unlimited');
    await server.services.runner.waitForHead();
    const responses = await Promise.all(Array.from({ length: CALLS }, () => getJson(`${server.url}/v1/scores/AAPL`, key)));
    for (const r of responses) {
      expect(r.status).to.equal(200);
      answered.push(r.headers.get('x-request-id')!);
    }
  });
  after(() => server.stop());

  /** Every line of the ledger, newest first, `limit` a page. */
  async function listing(limit: number): Promise<Line[]> {
    const lines: Line[] = [];
    let cursor: string | null = null;
    do {
      const page = await getJson(`${server.url}/v1/usage/ledger?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, key);
      expect(page.status).to.equal(200);
      expect(page.body.count).to.be.at.most(limit);
      lines.push(...(page.body.entries as Line[]));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    return lines;
  }

  it('stores the calls in fewer events than calls, at least one of them a batch', async () => {
    const events = await server.services.events.readStream(ledgerStream(account));
    const debitEvents = events.filter((e) => e.type === 'CreditsDebited' || e.type === 'CreditsDebitedBatch');
    expect(debitEvents.length).to.be.lessThan(CALLS);
    expect(events.some((e) => e.type === 'CreditsDebitedBatch')).to.equal(true);
  });

  it('lists one line per call, seq without a gap, pages cutting through batches, every line verifying', async () => {
    const lines = await listing(7);
    expect(lines.map((l) => l.seq)).to.deep.equal(Array.from({ length: lines.length }, (_, i) => lines.length - 1 - i));
    const charged = lines.filter((l) => l.kind === 'CreditsDebited').map((l) => l.request_id);
    expect(charged.sort()).to.deep.equal([...answered].sort());
    const oldestFirst = [...lines].reverse();
    let prev = '0'.repeat(64);
    for (const l of oldestFirst) {
      expect(l.prev_hash, `line ${l.seq}`).to.equal(prev);
      expect(hashOf(l), `line ${l.seq}`).to.equal(l.hash);
      prev = l.hash;
    }
    // The same lines whatever the page size.
    expect(await listing(1000)).to.deep.equal(lines);
  });

  it('lets a customer verify one call by its request id alone', async () => {
    const lines = await listing(1000);
    const id = answered[CALLS >> 1]!;
    const line = lines.find((l) => l.request_id === id)!;
    expect(line.kind).to.equal('CreditsDebited');
    expect(line.data).to.include({ request_id: id, endpoint: 'scores', channel: 'rest', cost: 2 });
    expect(hashOf(line)).to.equal(line.hash);
  });

  it('refuses a cursor it did not give with 400', async () => {
    for (const cursor of ['abc', '-1', '1.5']) {
      const r = await getJson(`${server.url}/v1/usage/ledger?cursor=${cursor}`, key);
      expect(r.status, cursor).to.equal(400);
      expect(r.body.code).to.equal('bad_request');
    }
  });

  it('passes the audit, whole and by month, and exports the same lines the listing shows', async () => {
    const deps = { events: server.services.events, reads: server.services.reads, accountId: account };
    const whole = await auditAccount(deps);
    expect(whole.problems).to.deep.equal([]);
    const month = await auditMonth({ ...deps, month: '2019-03' });
    expect(month.problems).to.deep.equal([]);
    expect(month.lines).to.equal((await listing(1000)).length);
    const exported = await exportLedger(deps);
    const listed = (await listing(1000)).reverse();
    expect(exported.map((l) => [l.seq, l.hash])).to.deep.equal(listed.map((l) => [l.seq, l.hash]));
  });
});
