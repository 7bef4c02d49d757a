/**
 * A key with a daily credit limit of N, and calls worth 3N made at once over REST, the MCP client
 * and MCP JSON-RPC batches, spread over one or more API processes, with a second key of the same
 * account calling beside it (test/e2e/key-budget-race.test.ts: one embedded process, and two API
 * processes on the engines). Every call is `scores` / `get_scores` of one ticker: 2 credits.
 */
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { callKeysOf, ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';

export const CALL_COST = 2;
const TICKER = 'AAPL';
/** Calls in flight at once over all the processes (under a key's 64, and the batches' 10 each). */
const IN_FLIGHT = 24;
/** An MCP client of before 2025-06-18 may send a batch; the server takes at most 10 calls in one. */
const BATCH = 10;
const BATCH_PROTOCOL = '2025-03-26';

/** What one call came to: served (with the key's budget left), refused (its code), or something else. */
export interface Outcome {
  face: 'rest' | 'mcp' | 'batch' | 'other-key';
  status: 'ok' | 'refused' | 'unexpected';
  code?: string;
  /** X-Key-Budget-Remaining, or MCP's `_meta.key_budget_remaining`. */
  budgetLeft?: number;
  /** A REST refusal's Retry-After. */
  retryAfter?: number;
  detail?: string;
}

async function restCall(url: string, key: string, face: Outcome['face']): Promise<Outcome> {
  const r = await fetch(`${url}/v1/scores/${TICKER}`, { headers: { 'X-API-Key': key } });
  const body = (await r.json()) as { code?: string };
  const left = r.headers.get('x-key-budget-remaining');
  if (r.status === 200) return { face, status: 'ok', ...(left === null ? {} : { budgetLeft: Number(left) }) };
  if (r.status === 429 && body.code === 'key_budget_exhausted') return { face, status: 'refused', code: body.code, retryAfter: Number(r.headers.get('retry-after')) };
  return { face, status: 'unexpected', detail: `${r.status} ${JSON.stringify(body)}` };
}

function toolOutcome(face: Outcome['face'], result: CallToolResult): Outcome {
  const code = (result.structuredContent as { code?: string } | undefined)?.code;
  const left = (result._meta as { key_budget_remaining?: number } | undefined)?.key_budget_remaining;
  if (!result.isError) return { face, status: 'ok', ...(left === undefined ? {} : { budgetLeft: left }) };
  if (code === 'key_budget_exhausted') return { face, status: 'refused', code };
  return { face, status: 'unexpected', detail: JSON.stringify(result.structuredContent) };
}

async function batchCall(url: string, key: string, size: number): Promise<Outcome[]> {
  const body = Array.from({ length: size }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'get_scores', arguments: { ticker: TICKER } } }));
  const r = await fetch(`${url}/mcp/http`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'X-API-Key': key, 'MCP-Protocol-Version': BATCH_PROTOCOL },
    body: JSON.stringify(body),
  });
  const answers = (await r.json()) as { result?: CallToolResult }[];
  if (r.status !== 200 || !Array.isArray(answers)) return [{ face: 'batch', status: 'unexpected', detail: `${r.status} ${JSON.stringify(answers)}` }];
  return answers.map((a) => (a.result ? toolOutcome('batch', a.result) : { face: 'batch', status: 'unexpected', detail: JSON.stringify(a) }));
}

/** An MCP client per process, for `key`. */
async function mcpClients(urls: readonly string[], key: string): Promise<Client[]> {
  return Promise.all(
    urls.map(async (url) => {
      const client = new Client({ name: 'key-budget-race', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': key } } }));
      return client;
    }),
  );
}

/**
 * Calls worth 3 × `limit` credits with `limited` (a third REST, a third through the MCP client, a
 * third in MCP batches of 10), and `otherCalls` REST calls with `other`, all shuffled together,
 * IN_FLIGHT at a time, round-robin over `urls`.
 */
export async function raceKeyBudget(urls: readonly string[], limited: string, other: string, limit: number, otherCalls: number): Promise<Outcome[]> {
  const calls = (3 * limit) / CALL_COST;
  const third = Math.floor(calls / 3);
  const clients = await mcpClients(urls, limited);
  const tasks: ((url: string, i: number) => Promise<Outcome[]>)[] = [];
  for (let i = 0; i < third; i++) tasks.push(async (url) => [await restCall(url, limited, 'rest')]);
  for (let i = 0; i < third; i++) tasks.push(async (_url, n) => [toolOutcome('mcp', (await clients[n % clients.length]!.callTool({ name: 'get_scores', arguments: { ticker: TICKER } })) as CallToolResult)]);
  for (let left = calls - 2 * third; left > 0; left -= BATCH) tasks.push((url) => batchCall(url, limited, Math.min(BATCH, left)));
  for (let i = 0; i < otherCalls; i++) tasks.push(async (url) => [await restCall(url, other, 'other-key')]);
  // A fixed shuffle: every face meets every other in the race.
  for (let i = tasks.length - 1; i > 0; i--) {
    const j = (i * 7919) % (i + 1);
    [tasks[i], tasks[j]] = [tasks[j]!, tasks[i]!];
  }
  const out: Outcome[] = [];
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < tasks.length) {
          const n = next++;
          out.push(...(await tasks[n]!(urls[n % urls.length]!, n)));
        }
      }),
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  return out;
}

/** Credits the account's ledger charged to each key (each debit line, by the key its event's metadata names). */
export async function chargedByKey(events: Pick<EventStore, 'readStream'>, account: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const e of await events.readStream(ledgerStream(account))) {
    const keys = e.type === 'CreditsDebitedBatch' ? ((e.metadata['key_ids'] as string[] | undefined) ?? []) : callKeysOf(e);
    ledgerLines(e as unknown as LedgerEvent).forEach((line, i) => {
      const key = keys[i];
      if (line.type === 'CreditsDebited' && key) out.set(key, (out.get(key) ?? 0) + line.data.cost);
    });
  }
  return out;
}

/**
 * The race's verdict: exactly `limit` credits of answers to the limited key over every face, the
 * rest refused with key_budget_exhausted (REST's with Retry-After), nothing else; the other key
 * answered every time; the budget left said on answers, never below 0.
 */
export function expectExactSpend(outcomes: readonly Outcome[], limit: number, otherCalls: number): void {
  expect(outcomes.filter((o) => o.status === 'unexpected').map((o) => `${o.face}: ${o.detail}`)).to.deep.equal([]);
  const mine = outcomes.filter((o) => o.face !== 'other-key');
  expect(mine).to.have.length((3 * limit) / CALL_COST);
  const served = mine.filter((o) => o.status === 'ok');
  expect(served.length * CALL_COST, 'credits served to the limited key').to.equal(limit);
  for (const face of ['rest', 'mcp', 'batch'] as const) expect(mine.filter((o) => o.face === face && o.status === 'refused').length, `${face} refusals`).to.be.greaterThan(0);
  expect(served.map((o) => o.budgetLeft).filter((b) => b === undefined || b < 0 || b >= limit)).to.deep.equal([]);
  expect(served.some((o) => o.budgetLeft === 0)).to.equal(true);
  for (const r of mine.filter((o) => o.face === 'rest' && o.status === 'refused')) expect(r.retryAfter).to.be.greaterThan(0);
  const others = outcomes.filter((o) => o.face === 'other-key');
  expect(others.map((o) => o.status)).to.deep.equal(Array.from({ length: otherCalls }, () => 'ok'));
}
