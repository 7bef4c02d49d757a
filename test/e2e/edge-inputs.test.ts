/**
 * Inputs at the edge of the contract, over REST and MCP as a client sends them, each refused for
 * free: a ticker with whitespace around or in it (also percent-encoded) names no stock, and the
 * argument names `__proto__`, `constructor` and `prototype` are unknown arguments like any other.
 */
import { expect } from 'chai';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { startTestServer, type TestServer } from '../support/server.js';

describe('Edge inputs are refused before they cost anything', function () {
  this.timeout(120_000);
  let server: TestServer;
  let key = '';
  let accountId = '';
  before(async () => {
    server = await startTestServer({ now: '2019-06-14T12:00:00Z' });
    const issued = await createAccountWithKey(server.services, { tier: 'quant', email: 'edges@example.test' });
    [key, accountId] = [issued.key, issued.account_id];
    await server.services.runner.waitForHead();
  });
  after(() => server?.stop());

  async function debits(): Promise<number> {
    const events = (await server.services.events.readStream(ledgerStream(accountId))) as unknown as LedgerEvent[];
    return events.flatMap(ledgerLines).filter((e) => e.type === 'CreditsDebited').length;
  }

  /** A tools/call with `args` written as raw JSON text (an object literal could not carry `__proto__`). */
  async function mcpCall(tool: string, args: string) {
    const r = await fetch(`${server.url}/mcp/http`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'X-API-Key': key, 'MCP-Protocol-Version': '2025-06-18' },
      body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${tool}","arguments":${args}}}`,
    });
    expect(r.status).to.equal(200);
    return ((await r.json()) as { result: { isError?: boolean; structuredContent: Record<string, unknown> } }).result;
  }

  it('answers a ticker with whitespace around or in it 404 not_found over REST, charging nothing', async () => {
    const before = await debits();
    for (const segment of ['AAPL%20', '%20AAPL', 'AAPL%09', 'AAPL%0A', 'AA%20PL', 'AAPL%C2%A0']) {
      const r = await fetch(`${server.url}/v1/scores/${segment}`, { headers: { 'X-API-Key': key } });
      expect(r.status, segment).to.equal(404);
      expect(((await r.json()) as { code: string }).code, segment).to.equal('not_found');
    }
    expect((await fetch(`${server.url}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } })).status).to.equal(200);
    expect((await debits()) - before, 'only the well-formed call is charged').to.equal(1);
  });

  it('answers the same tickers over MCP as the tool error not_found, charging nothing', async () => {
    const before = await debits();
    for (const ticker of ['AAPL ', ' AAPL', 'AAPL\\t', 'AA PL']) {
      const result = await mcpCall('get_scores', `{"ticker":"${ticker}"}`);
      expect(result.isError, ticker).to.equal(true);
      expect(result.structuredContent, ticker).to.include({ status: 404, code: 'not_found' });
    }
    expect(await debits()).to.equal(before);
  });

  it('refuses __proto__, constructor and prototype as unknown arguments (free bad_request), as any other name', async () => {
    const before = await debits();
    for (const [tool, args] of [
      ['get_scores', '{"ticker":"AAPL","__proto__":{"x":1}}'],
      ['get_scores', '{"ticker":"AAPL","constructor":1}'],
      ['get_scores', '{"ticker":"AAPL","prototype":{}}'],
      ['get_track_record', '{"__proto__":null}'],
      ['get_track_record', '{"constructor":{"prototype":{"polluted":true}}}'],
      ['get_scores', '{"ticker":"AAPL","nonsense":1}'],
    ] as const) {
      const result = await mcpCall(tool, args);
      expect(result.isError, args).to.equal(true);
      expect(result.structuredContent, args).to.include({ status: 400, code: 'bad_request' });
      expect(String(result.structuredContent['detail']), args).to.match(/^unknown argument "(__proto__|constructor|prototype|nonsense)" of /);
    }
    expect(({} as Record<string, unknown>)['polluted'], 'no prototype polluted').to.equal(undefined);
    for (const name of ['__proto__', 'constructor', 'prototype']) {
      const r = await fetch(`${server.url}/v1/scores/AAPL?${name}=1`, { headers: { 'X-API-Key': key } });
      expect(r.status, name).to.equal(400);
    }
    expect(await debits(), 'nothing charged').to.equal(before);
  });
});
