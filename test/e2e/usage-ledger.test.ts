import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';

/** The recipe of docs/ledger.md, written independently of the service's code. */
function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
    .join(',')}}`;
}
function entryHash(e: { kind: string; prev_hash: string; data: Record<string, unknown> }): string {
  const { hash: _h, ...rest } = e.data;
  return createHash('sha256').update(`${e.prev_hash}\n${e.kind}\n${canonical(rest)}`).digest('hex');
}

describe('GET /v1/usage/ledger', function () {
  this.timeout(120_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ now: '2019-03-15T12:00:00Z' });
  });
  after(() => server.stop());

  it('lists my own charges newest first, paged, with a hash chain I can verify myself', async () => {
    const k = await createAccountWithKey(server.services, { tier: 'hobbyist' });
    const other = await createAccountWithKey(server.services, { tier: 'hobbyist' });
    await server.services.runner.waitForHead();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await getJson(`${server.url}/v1/scores/AAPL`, k.key);
      ids.push(r.headers.get('x-request-id')!);
    }
    await getJson(`${server.url}/v1/scores/AAPL`, other.key);
    await server.services.ledger.execute(k.account_id, { type: 'PurchasePack', data: { pack_id: 'p', credits: 1000 } });

    const first = await getJson(`${server.url}/v1/usage/ledger?month=2019-03&limit=4`, k.key);
    expect(first.status).to.equal(200);
    expect(first.body.count).to.equal(4);
    expect(first.body.next_cursor).to.be.a('string');
    const second = await getJson(`${server.url}/v1/usage/ledger?month=2019-03&limit=4&cursor=${first.body.next_cursor}`, k.key);
    const entries = [...first.body.entries, ...second.body.entries] as { seq: number; kind: string; request_id: string | null; cost: number | null; hash: string; prev_hash: string; data: Record<string, unknown> }[];
    expect(second.body.next_cursor).to.equal(null);
    expect(entries.map((e) => e.seq)).to.deep.equal([7, 6, 5, 4, 3, 2, 1, 0]);
    expect(entries[0]!.kind).to.equal('PackPurchased');
    const debits = entries.filter((e) => e.kind === 'CreditsDebited');
    expect(debits.map((e) => e.request_id).reverse()).to.deep.equal(ids);
    expect(debits.every((e) => e.cost === 2)).to.equal(true);
    // Verify the chain from the oldest entry, with nothing but the entries and the recipe.
    const oldestFirst = [...entries].reverse();
    expect(oldestFirst[0]!.prev_hash).to.equal('0'.repeat(64));
    oldestFirst.forEach((e, i) => {
      expect(entryHash(e), `entry ${e.seq}`).to.equal(e.hash);
      if (i > 0) expect(e.prev_hash).to.equal(oldestFirst[i - 1]!.hash);
    });
  });

  it('refuses a malformed month and a limit above its maximum', async () => {
    const k = await createAccountWithKey(server.services, { tier: 'free' });
    await server.services.runner.waitForHead();
    expect((await getJson(`${server.url}/v1/usage/ledger?month=2019-3`, k.key)).body.code).to.equal('bad_request');
    expect((await getJson(`${server.url}/v1/usage/ledger?limit=1001`, k.key)).status).to.equal(422);
    // Any value above the maximum is the 422, not a 400; malformed ones are 400 with the wording of
    // every other integer parameter; an empty one is refused too, as elsewhere (absent: the default).
    const huge = await getJson(`${server.url}/v1/usage/ledger?limit=99999999999999999999`, k.key);
    expect(huge.body).to.include({ status: 422, code: 'limit_exceeded' });
    expect((await getJson(`${server.url}/v1/usage/ledger?limit=abc`, k.key)).body).to.include({ code: 'bad_request', detail: 'limit must be an integer (got "abc")' });
    expect((await getJson(`${server.url}/v1/usage/ledger?limit=`, k.key)).body).to.include({ status: 400, code: 'bad_request', detail: 'limit is empty; omit it for the default' });
  });
});
