import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import type { Tier } from '../../src/domain/plans.js';
import { FREE_ANSWER_BURST_SECONDS } from '../../src/app/metering/free-answer-bytes.js';
import { TEXT_TRADES, trackRecordText } from '../../src/app/mcp/tools/get-track-record.tool.js';
import { rawGet as raw, type RawAnswer as Raw } from '../support/raw-get.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** The free tier's budget in this suite: small enough that a few track records spend it. */
const RATE = 16_384;
const BURST = RATE * FREE_ANSWER_BURST_SECONDS;

/**
 * Issue 42 item 5, "Free answers are bounded": each account's free answers (the calls that cost no
 * credits) move at most FREE_ANSWER_BYTES_PER_SECOND (a paid tier more), REST and MCP together;
 * over it a free answer is 429 `rate_limited` with `bytes_per_second`, charged nothing. MCP's
 * track record carries the record once (structuredContent) with a summary as its text block.
 */
describe("Free answers are bounded: each account's budget of free answers' bytes, REST and MCP", function () {
  this.timeout(120_000);
  let server: TestServer;
  const clients: Client[] = [];
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z', env: { FREE_ANSWER_BYTES_PER_SECOND: String(RATE) } });
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server?.stop();
  });

  let accounts = 0;
  async function newKey(tier: Tier) {
    const issued = await createAccountWithKey(server.services, { tier, email: `free-bytes-${++accounts}@example.test` });
    await server.services.runner.waitForHead();
    return issued;
  }
  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'free-bytes-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': key } } }));
    clients.push(client);
    return client;
  }
  const debits = async (accountId: string) =>
    ((await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[]).flatMap(ledgerLines).filter((e) => e.type === 'CreditsDebited');
  const get = (path: string, key: string, headers: Record<string, string> = {}) => raw(`${server.url}${path}`, { 'X-API-Key': key, ...headers });

  /** The track record fetched again and again until refused for its bytes (well within the request rate): the bodies served, and the refusal. */
  async function untilRefused(key: string) {
    const sizes: number[] = [];
    const started = performance.now();
    for (let i = 0; i < 15; i++) {
      const r = await get('/v1/track-record', key);
      if (r.status !== 200) {
        expect(JSON.parse(r.body.toString()), `after ${sizes.length} bodies`).to.include({ status: 429, bytes_per_second: RATE });
        return { sizes, refused: r, seconds: (performance.now() - started) / 1000 };
      }
      sizes.push(r.body.length);
    }
    throw new Error(`15 bodies of ${sizes[0]} bytes served: the budget of ${BURST} bytes never refused`);
  }

  it("serves a free key's track record until its budget is spent, then refuses it 429 rate_limited with bytes_per_second and Retry-After, charging nothing", async () => {
    const k = await newKey('free');
    const first = await get('/v1/track-record', k.key);
    const credits = first.headers['x-credits-remaining'];
    const { sizes, refused, seconds } = await untilRefused(k.key);
    sizes.unshift(first.body.length);
    const sent = sizes.reduce((a, b) => a + b, 0);
    // Spent: the bytes sent reached the burst; and each body was sent while something was left.
    expect(sent, `${sizes.length} bodies of ${sizes[0]} bytes`).to.be.at.least(BURST);
    expect(sent - sizes.at(-1)!).to.be.below(BURST + RATE * seconds);
    expect(refused.status).to.equal(429);
    expect(refused.headers['content-type']).to.match(/^application\/problem\+json/);
    const problem = JSON.parse(refused.body.toString()) as Record<string, unknown>;
    expect(problem).to.include({ code: 'rate_limited', status: 429, bytes_per_second: RATE });
    expect(problem).to.not.have.property('per_second');
    expect(problem['detail']).to.match(/free answers .* may move 16384 bytes per second \(bursts of 131072\)/);
    expect(Number(refused.headers['retry-after'])).to.equal(problem['retry_after_seconds']).and.be.at.least(1);
    // Nothing charged: no debit, the same balance on the refusal.
    expect(refused.headers['x-credits-remaining']).to.equal(credits);
    expect(await debits(k.account_id)).to.deep.equal([]);
    // The budget is the free answers': a paid call of the same key is served (and charged) meanwhile.
    expect((await get('/v1/scores/AAPL', k.key)).status).to.equal(200);
    expect(await debits(k.account_id)).to.have.length(1);
  });

  it('lets a client that keeps the body fetch it again after Retry-After, and its 304s cost nothing', async () => {
    const k = await newKey('free');
    const { refused } = await untilRefused(k.key);
    const body = await new Promise<Raw>((resolve) => setTimeout(() => resolve(get('/v1/track-record', k.key)), Number(refused.headers['retry-after']) * 1000 + 200));
    expect(body.status).to.equal(200);
    const tag = String(body.headers['etag']);
    // That body may have spent the budget again (a spent budget refuses before the ETag is
    // worked out); once it has refilled, polls with the ETag are all 304 and spend nothing.
    const next = await get('/v1/track-record', k.key, { 'If-None-Match': tag });
    if (next.status === 429) await new Promise((r) => setTimeout(r, Number(next.headers['retry-after']) * 1000 + 200));
    else expect(next.status).to.equal(304);
    for (let i = 0; i < 10; i++) expect((await get('/v1/track-record', k.key, { 'If-None-Match': tag })).status, `poll ${i}`).to.equal(304);
  });

  it("holds a paid tier's larger budget: a quant key fetches the record more often than the free one could, every time", async () => {
    const free = await untilRefused((await newKey('free')).key);
    const quant = await newKey('quant');
    for (let i = 0; i <= free.sizes.length + 1; i++) {
      const r = await get('/v1/track-record', quant.key, { 'Accept-Encoding': 'gzip' });
      expect(r.status, `call ${i}`).to.equal(200);
      expect(r.headers['content-encoding']).to.equal('gzip');
    }
  });

  it('counts MCP results in the same budget (structuredContent and text), refusing a spent one with a rate_limited tool error, and REST after it', async () => {
    const k = await newKey('free');
    const client = await connect(k.key);
    let served = 0;
    let result: CallToolResult | null = null;
    for (let i = 0; i < 100 && !result; i++) {
      const r = (await client.callTool({ name: 'get_track_record', arguments: {} })) as CallToolResult;
      if (r.isError) result = r;
      else served++;
    }
    expect(served).to.be.at.least(1);
    expect(result?.structuredContent).to.include({ code: 'rate_limited', status: 429, bytes_per_second: RATE });
    expect(result?._meta?.['credits_remaining']).to.equal(1000);
    const text = result?.content[0];
    expect(JSON.parse(text?.type === 'text' ? text.text : 'null')).to.deep.equal(result?.structuredContent);
    // One bucket for both faces: the REST twin of another free read is refused too.
    const meta = await get('/v1/meta', k.key);
    expect(meta.status).to.equal(429);
    expect(JSON.parse(meta.body.toString())).to.include({ code: 'rate_limited', bytes_per_second: RATE });
    expect(await debits(k.account_id)).to.deep.equal([]);
  });

  it('answers get_track_record with the whole record once, in structuredContent, and a summary as text: under 1.2 times the REST body', async () => {
    const k = await newKey('quant');
    const rest = await get('/v1/track-record', k.key);
    const record = JSON.parse(rest.body.toString()) as { trades: unknown[]; closed_trades: number };
    expect(record.trades.length).to.be.greaterThan(TEXT_TRADES);
    const post = await fetch(`${server.url}/mcp/http`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18', 'X-API-Key': k.key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_track_record', arguments: {} } }),
    });
    const answer = await post.text();
    expect(Buffer.byteLength(answer), `${Buffer.byteLength(answer)} bytes against REST's ${rest.body.length}`).to.be.below(1.2 * rest.body.length);
    // Through the SDK's client: structuredContent is the REST body, every trade; the text its summary.
    const result = (await (await connect(k.key)).callTool({ name: 'get_track_record', arguments: {} })) as CallToolResult;
    expect(result.structuredContent).to.deep.equal(record);
    const text = result.content[0];
    const summary = JSON.parse(text?.type === 'text' ? text.text : 'null') as Record<string, unknown>;
    const { trades, ...aggregates } = record;
    expect(summary).to.not.have.property('trades');
    expect(summary).to.include(aggregates);
    expect(summary['newest_trades']).to.deep.equal(trades.slice(0, TEXT_TRADES));
    expect(summary['note']).to.include(`The newest ${TEXT_TRADES} of ${record.closed_trades} closed trades`).and.include('structuredContent');
  });

  it("keeps the text block the body's JSON for a record of at most 20 trades", () => {
    const body = { closed_trades: 1, win_rate: 1, trades: [{ ticker: 'COST', return_pct: 5.5 }], as_of: '2019-06-13' };
    expect(trackRecordText(body, JSON.stringify(body))).to.equal(JSON.stringify(body));
  });
});
