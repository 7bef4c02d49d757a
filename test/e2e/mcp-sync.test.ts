import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { getJson, startTestServer, type TestServer } from '../support/server.js';

interface Row {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
  restated_at: string;
}
interface HistoryBody {
  rows: Row[];
  count: number;
  next_since?: unknown;
}

const TICKERS = 'AAPL,MSFT,KO';
const START = '2019-05-01';

/**
 * What is written before each poll after the first: score rows as `ticker,date,main_street,wall_street`.
 * The clock is pinned, so every write lands in the same second as every poll: a watermark of
 * seconds alone would either repeat rows or miss them. Rows of other tickers and rows written
 * again with the values they already have change nothing the loop asks for.
 */
const ROUNDS: { write: string[]; delivered: string[] }[] = [
  { write: ['AAPL,2019-05-15,11,89', 'MSFT,2019-06-04,12,88'], delivered: ['AAPL 2019-05-15', 'MSFT 2019-06-04'] },
  { write: [], delivered: [] },
  { write: ['AAPL,2019-05-15,13,87', 'KO,2019-05-22,14,86', 'KO,2019-06-10,15,85'], delivered: ['AAPL 2019-05-15', 'KO 2019-05-22', 'KO 2019-06-10'] },
  { write: ['KO,2019-05-22,14,86', 'NVDA,2019-06-10,16,84'], delivered: [] },
  { write: ['MSFT,2019-06-04,17,83', 'AAPL,2019-06-10,18,82'], delivered: ['AAPL 2019-06-10', 'MSFT 2019-06-04'] },
];

describe('An incremental sync loop over MCP', function () {
  this.timeout(120_000);
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
  });
  after(async () => {
    await client?.close();
    await server.stop();
  });

  const newKey = async (email: string) => {
    const issued = await createAccountWithKey(server.services, { tier: 'quant', email });
    await server.services.runner.waitForHead();
    return issued;
  };
  const rowId = (r: Row) => `${r.ticker} ${r.date}`;
  async function write(lines: string[]) {
    if (lines.length === 0) return;
    const written = await ingestRows(server.services.events, server.services.clock, parseIngestFile(['ticker,date,main_street,wall_street', ...lines].join('\n'), 'csv'));
    if (written.position !== null) await server.services.runner.waitFor(written.position);
  }

  it('gets the same rows as the REST loop, each written row once, following next_since, and reads its balance with get_usage', async () => {
    const viaRest = await newKey('sync-rest@example.test');
    const viaMcp = await newKey('sync-mcp@example.test');
    client = new Client({ name: 'mcp-sync', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': viaMcp.key } } }));

    const restCopy = new Map<string, Row>();
    const mcpCopy = new Map<string, Row>();
    let restSince: string | undefined;
    let mcpSince: string | undefined;
    let billed = 0;
    let balance: unknown = null;
    for (const [poll, round] of [{ write: [], delivered: [] }, ...ROUNDS].entries()) {
      await write(round.write);
      const query = `tickers=${TICKERS}&start=${START}${restSince === undefined ? '' : `&since=${encodeURIComponent(restSince)}`}`;
      const rest = await getJson(`${server.url}/v1/scores/history?${query}`, viaRest.key);
      expect(rest.status, `poll ${poll}`).to.equal(200);
      const result = (await client.callTool({
        name: 'get_multi_ticker_history',
        arguments: { tickers: TICKERS, start: START, ...(mcpSince === undefined ? {} : { since: mcpSince }) },
      })) as CallToolResult;
      expect(result.isError, `poll ${poll}`).to.not.equal(true);
      const body = result.structuredContent as unknown as HistoryBody;
      expect(body, `poll ${poll}`).to.deep.equal(rest.body);
      expect(body.next_since, `poll ${poll}: the answer names where the next poll starts`).to.be.a('string').and.not.equal('');

      if (poll === 0) expect(body.count).to.be.greaterThan(60);
      else {
        // Exactly what was written since the previous poll: nothing again, nothing missed.
        expect(body.rows.map(rowId).sort(), `poll ${poll}`).to.deep.equal(round.delivered);
        for (const line of round.write) {
          const [ticker, date, main, wall] = line.split(',');
          const row = body.rows.find((r) => r.ticker === ticker && r.date === date);
          if (row) expect([row.main_street, row.wall_street], line).to.deep.equal([Number(main), Number(wall)]);
        }
      }
      for (const r of (rest.body as HistoryBody).rows) restCopy.set(rowId(r), r);
      for (const r of body.rows) mcpCopy.set(rowId(r), r);
      restSince = (rest.body as HistoryBody).next_since as string;
      mcpSince = body.next_since as string;
      billed += body.count;
      balance = result._meta?.['credits_remaining'];
    }

    // The agent's balance, read with a tool: every synced row cost 1 credit, and nothing else was charged.
    const usage = (await client.callTool({ name: 'get_usage', arguments: {} })) as CallToolResult;
    expect(usage.isError).to.not.equal(true);
    const figures = usage.structuredContent as { used_this_month: number; credits_remaining: number; prepaid_credits: number; monthly_allowance: number };
    expect(figures.used_this_month).to.equal(billed);
    expect(figures.credits_remaining).to.equal(figures.monthly_allowance - billed);
    expect(figures.credits_remaining + figures.prepaid_credits).to.equal(balance);
    expect(usage._meta?.['credits_remaining']).to.equal(balance);
    const header = (await getJson(`${server.url}/v1/coverage`, viaMcp.key)).headers.get('x-credits-remaining');
    expect(balance).to.equal(Number(header));
    // The REST loop cost the same.
    expect(figures).to.deep.equal((await getJson(`${server.url}/v1/usage`, viaRest.key)).body);

    // Both copies are the data as it stands now.
    const full = (await getJson(`${server.url}/v1/scores/history?tickers=${TICKERS}&start=${START}`, viaRest.key)).body as HistoryBody;
    expect([...mcpCopy.values()].sort((a, b) => (rowId(a) < rowId(b) ? -1 : 1))).to.deep.equal(full.rows);
    expect([...mcpCopy.entries()]).to.have.deep.members([...restCopy.entries()]);
  });
});
