import { expect } from 'chai';
import { RATE_CARD, RATE_KEYS } from '../../src/domain/rate-card.js';
import { TICKERS_STREAM } from '../../src/domain/scores/reference.events.js';
import { CountingReadStore, type CountedRead } from '../support/counting-read-store.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';

/** Read-model work a data-derived free answer (meta, coverage, track record) may do on a repeat. */
const BUILT_ONCE = new Set(['meta', 'coverage', 'track_record']);
/** The most reads a repeated free call may make: an account's own few documents, by index. */
const MAX_READS = 2;

/**
 * No free endpoint is expensive twice (issue 28, item 2): every free GET of the rate card, called
 * again over real HTTP after another customer's paid call was projected (a batch that moves every
 * projection's checkpoint), reads the read models at most twice, each read bounded; the answers
 * derived from the whole dataset (meta, coverage, track record) do not read them at all. Counted
 * with a counting wrapper around the queries' ReadStore port, not timed.
 */
describe('Free endpoints: a repeated call is cheap', function () {
  this.timeout(180_000);
  let server: TestServer;
  let counter: CountingReadStore;
  let quant = '';
  let payer = '';
  let webhookId = 0;

  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z', env: { WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' } });
    counter = new CountingReadStore(server.services.queries.reads);
    server.services.queries.reads = counter;
    quant = demoKey(server.dir, 'quant');
    payer = demoKey(server.dir, 'enterprise');
    const hook = await fetch(`${server.url}/v1/webhooks`, {
      method: 'POST',
      headers: { 'X-API-Key': quant, 'Content-Type': 'application/json' },
      body: JSON.stringify({ event_type: 'score_move', url: 'https://127.0.0.1:9/hooks' }),
    });
    expect(hook.status).to.equal(201);
    webhookId = ((await hook.json()) as { id: number }).id;
    await server.services.runner.waitForHead();
  });
  after(async () => {
    await server?.stop();
  });

  /** Every free GET route of the rate card, with its parameters filled in. */
  function freeCalls(): { key: string; path: string }[] {
    const out: { key: string; path: string }[] = [];
    for (const key of RATE_KEYS) {
      const entry = RATE_CARD[key];
      if (entry.credits !== 0) continue;
      for (const route of entry.routes) {
        // A bundle file's download streams the file (its cost is its bytes, by design) and reads
        // the export runs through the commands' store: not a read-model query.
        if (route.method !== 'GET' || route.path.includes('{bundle_id}')) continue;
        out.push({ key, path: route.path.replace('{webhook_id}', String(webhookId)) });
      }
    }
    out.push({ key: 'coverage', path: '/v1/coverage?since=2019-06-01' });
    return out;
  }

  async function get(path: string, key: string): Promise<number> {
    const r = await fetch(`${server.url}${path}`, { headers: { 'X-API-Key': key } });
    await r.arrayBuffer();
    return r.status;
  }

  it('covers every free read of the rate card', () => {
    expect(new Set(freeCalls().map((c) => c.key))).to.deep.equal(new Set(['coverage', 'track_record', 'usage', 'usage_ledger', 'requests', 'meta', 'bulk_exports', 'keys', 'webhooks']));
  });

  it('answers each free GET again with at most two bounded reads, and none for meta, coverage and track record', async () => {
    const costs: Record<string, CountedRead[]> = {};
    for (const { key, path } of freeCalls()) {
      expect(await get(path, quant), path).to.equal(200);
      // Another customer's paid call: its debit is a batch that every projection's checkpoint follows.
      expect(await get('/v1/scores/AAPL', payer)).to.equal(200);
      await server.services.runner.waitForHead();
      const reads = await counter.during(async () => expect(await get(path, quant), path).to.equal(200));
      costs[path] = reads;
      expect(reads.filter((r) => r.unbounded), `${path}: unbounded reads`).to.deep.equal([]);
      expect(reads.length, `${path}: ${JSON.stringify(reads)}`).to.be.at.most(BUILT_ONCE.has(key) ? 0 : MAX_READS);
    }
    expect(Object.keys(costs)).to.include.members(['/v1/meta', '/v1/coverage', '/v1/track-record', '/v1/usage', '/v1/usage/ledger', '/v1/requests', '/v1/bulk/exports', '/v1/keys', '/v1/webhooks']);
  });

  it('builds meta again once the read models it describes change, and then serves that', async () => {
    const universe = async () => {
      const r = await fetch(`${server.url}/v1/meta`, { headers: { 'X-API-Key': quant } });
      return Number(/^(\d+) US-listed/.exec(((await r.json()) as { coverage: string }).coverage)![1]);
    };
    const before = await universe();
    expect(await counter.during(universe)).to.have.length(0);
    // A change to what meta reads: a new ticker listed.
    await server.services.events.append(TICKERS_STREAM, [{ type: 'TickerListed', data: { symbol: 'ZZZZ', company: 'ZZZZ Inc', sector: 'Tech', size_rank: 9999 } }]);
    await server.services.runner.waitForHead();
    const rebuilt = await counter.during(async () => expect(await universe()).to.equal(before + 1));
    expect(rebuilt.length).to.be.above(0);
    expect(await counter.during(universe)).to.have.length(0);
  });
});
