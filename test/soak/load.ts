/**
 * The soak's traffic: the accounts it creates, the mixed REST and MCP load they send, every answer
 * recorded (status, problem code, X-Request-Id, account, what the call cost), and the restatement
 * ingests that run beside it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Tier } from '../../src/domain/plans.js';
import type { UsageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { cli, cliOk } from './processes.js';

/** One account of the soak, and how it is set up before the load. */
export interface AccountPlan {
  label: string;
  tier: Tier;
  pro?: boolean;
  /** `scores overage on` */
  overage: boolean;
  /** `scores packs add --credits N` */
  pack?: number;
  /** Spend the allowance down to this `credits_remaining` before the load (a hard stop soon under load). */
  drainTo?: number;
  /** `scores rate-limit set --per-second`: `tier` leaves the plan's own rate (the key is throttled). */
  rate: 'tier' | 'unlimited' | number;
  /** `scores keys create --email`: where its usage alerts go (none: no alert email). */
  email?: string;
  /** Concurrent request loops, and a pause after each request. */
  workers: number;
  pauseMs: number;
}

export const ACCOUNT_PLANS: readonly AccountPlan[] = [
  // Free: hard stop only, at its tier's rate (10/s): credits_exhausted and rate_limited.
  { label: 'free-stop', tier: 'free', overage: false, drainTo: 200, rate: 'tier', workers: 3, pauseMs: 0 },
  // Free with the Pro overlay (5,000 credits), not throttled: runs into its hard stop under load.
  { label: 'free-pro', tier: 'free', pro: true, overage: false, drainTo: 1_500, rate: 5_000, workers: 3, pauseMs: 0 },
  // Hobbyist with a small allowance left, hard stop.
  { label: 'hobbyist-stop', tier: 'hobbyist', overage: false, drainTo: 1_000, rate: 5_000, workers: 3, pauseMs: 0 },
  // Hobbyist: allowance nearly gone, then a prepaid pack, then the hard stop.
  { label: 'hobbyist-pack', tier: 'hobbyist', overage: false, drainTo: 300, pack: 1_500, rate: 5_000, workers: 3, pauseMs: 0 },
  // Hobbyist with overage on: allowance, then the pack, then overage (credits_remaining goes negative, by design).
  { label: 'hobbyist-overage', tier: 'hobbyist', overage: true, drainTo: 300, pack: 1_000, rate: 5_000, workers: 3, pauseMs: 0 },
  // Builder at its tier's rate (50/s), sent faster than that: rate_limited.
  { label: 'builder-tier-rate', tier: 'builder', overage: false, rate: 'tier', workers: 8, pauseMs: 0 },
  // Builder drained, with a pack and overage on.
  { label: 'builder-overage', tier: 'builder', overage: true, drainTo: 1_000, pack: 1_000, rate: 5_000, workers: 3, pauseMs: 0 },
  { label: 'quant', tier: 'quant', overage: false, pack: 5_000, rate: 5_000, workers: 4, pauseMs: 0 },
  { label: 'enterprise', tier: 'enterprise', overage: false, rate: 'unlimited', workers: 4, pauseMs: 0 },
];

export interface Account extends AccountPlan {
  index: number;
  account_id: string;
  key_id: string;
  key: string;
}

export type Channel = 'rest' | 'mcp';
export type Phase = 'setup' | 'load' | 'final';

/** One answer (or a request that got none: status 0, code `connection`). */
export interface Answer {
  account: number;
  channel: Channel;
  /** The request kind: `scores`, `history`, `screener`, `usage`, `usage_ledger`, `mcp:get_scores`, … */
  kind: string;
  status: number;
  /** null for an answered call (200; MCP: a tool result without isError); else the problem `code`. */
  code: string | null;
  /** X-Request-Id of the response (null without a response). */
  requestId: string | null;
  /** Credits the call should have cost, computed from what it returned (0 for refusals). */
  cost: number;
  /** ms since the soak's start. */
  at: number;
  phase: Phase;
}

export class Recorder {
  readonly answers: Answer[] = [];
  private readonly t0 = performance.now();
  phase: Phase = 'setup';

  now(): number {
    return performance.now() - this.t0;
  }

  add(a: Omit<Answer, 'at' | 'phase'>): Answer {
    const answer = { ...a, at: this.now(), phase: this.phase };
    this.answers.push(answer);
    return answer;
  }
}

/** A deterministic PRNG (mulberry32), so a run can be repeated with SOAK_SEED. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Request {
  kind: string;
  channel: Channel;
  path: string;
  /** MCP: the tool call. */
  tool?: { name: string; arguments: Record<string, unknown> };
  /** Credits of a 200 from its body. */
  cost: (body: any) => number;
}

const rowsOf = (body: any): number => (Array.isArray(body?.rows) ? (body.rows as unknown[]).length : 0);

/** The mix each worker draws from: REST (five endpoints) and MCP `get_scores`. */
export function requestMix(tickers: readonly string[], historyStart: string, random: () => number): () => Request {
  const ticker = () => tickers[Math.floor(random() * tickers.length)]!;
  const table: [number, () => Request][] = [
    [28, () => ({ kind: 'scores', channel: 'rest', path: `/v1/scores/${ticker()}`, cost: () => 2 })],
    [14, () => ({ kind: 'history', channel: 'rest', path: `/v1/scores/${ticker()}/history?start=${historyStart}`, cost: (b) => rowsOf(b) })],
    [10, () => ({ kind: 'screener', channel: 'rest', path: `/v1/screener?limit=${1 + Math.floor(random() * 5)}`, cost: (b) => 2 * rowsOf(b) })],
    [9, () => ({ kind: 'usage', channel: 'rest', path: '/v1/usage', cost: () => 0 })],
    [5, () => ({ kind: 'usage_ledger', channel: 'rest', path: '/v1/usage/ledger?limit=5', cost: () => 0 })],
    // A ticker nobody covers: 404 not_found, charged nothing.
    [2, () => ({ kind: 'scores', channel: 'rest', path: '/v1/scores/ZZZZQ', cost: () => 2 })],
    [32, () => {
      const t = ticker();
      return { kind: 'mcp:get_scores', channel: 'mcp', path: '/mcp/http', tool: { name: 'get_scores', arguments: { ticker: t } }, cost: () => 2 };
    }],
  ];
  const total = table.reduce((s, [w]) => s + w, 0);
  return () => {
    let r = random() * total;
    for (const [w, make] of table) {
      if ((r -= w) < 0) return make();
    }
    return table[0]![1]();
  };
}

const MCP_HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  'MCP-Protocol-Version': '2025-06-18',
};

let rpcId = 0;

/** Sends one request and records its answer; returns it (and the parsed body of a 200). */
export async function send(base: string, account: Account, req: Request, rec: Recorder): Promise<{ answer: Answer; body: any }> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${base}${req.path}`, {
      method: req.tool ? 'POST' : 'GET',
      headers: req.tool ? { ...MCP_HEADERS, 'X-API-Key': account.key } : { 'X-API-Key': account.key },
      body: req.tool ? JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: req.tool }) : undefined,
      signal: AbortSignal.timeout(20_000),
    });
    text = await res.text();
  } catch {
    return { answer: rec.add({ account: account.index, channel: req.channel, kind: req.kind, status: 0, code: 'connection', requestId: null, cost: 0 }), body: null };
  }
  const requestId = res.headers.get('x-request-id');
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: classified below
  }
  let code: string | null;
  let cost = 0;
  let payload: any = body;
  if (res.status !== 200) {
    code = typeof body?.code === 'string' ? body.code : `http_${res.status}`;
  } else if (req.tool) {
    if (body?.error) code = `jsonrpc_${body.error.code}`;
    else if (body?.result?.isError) code = typeof body.result.structuredContent?.code === 'string' ? body.result.structuredContent.code : 'mcp_tool_error';
    else if (body?.result) code = null;
    else code = 'mcp_no_result';
    payload = body?.result?.structuredContent ?? null;
  } else {
    code = body === null ? 'not_json' : null;
  }
  if (code === null) cost = req.cost(payload);
  const answer = rec.add({ account: account.index, channel: req.channel, kind: req.kind, status: res.status, code, requestId, cost });
  return { answer, body: payload };
}

/** GET a path with the account's key; the parsed body of a 200 (the answer is recorded). */
export async function getRecorded(base: string, account: Account, kind: string, path: string, cost: (b: any) => number, rec: Recorder) {
  return send(base, account, { kind, channel: 'rest', path, cost }, rec);
}

/** Every account of `plans`, made with the CLI, three at a time (each is a few CLI runs: create, overage, pack, rate limit). */
export async function createAccounts(plans: readonly AccountPlan[], env: NodeJS.ProcessEnv): Promise<Account[]> {
  const accounts: Account[] = [];
  for (let i = 0; i < plans.length; i += 3) {
    const made = await Promise.all(
      plans.slice(i, i + 3).map(async (plan, j) => {
        const flags = [...(plan.pro ? ['--pro'] : []), ...(plan.email ? ['--email', plan.email] : [])];
        const issued = JSON.parse(await cliOk(['keys', 'create', '--tier', plan.tier, ...flags, '--json'], env)) as {
          account_id: string;
          key_id: string;
          key: string;
        };
        const id = issued.account_id;
        if (plan.overage) await cliOk(['overage', 'on', '--account', id, '--json'], env);
        if (plan.pack) await cliOk(['packs', 'add', '--account', id, '--credits', String(plan.pack), '--json'], env);
        if (plan.rate !== 'tier') await cliOk(['rate-limit', 'set', '--account', id, '--per-second', String(plan.rate)], env);
        return { ...plan, index: i + j, account_id: id, key_id: issued.key_id, key: issued.key };
      }),
    );
    accounts.push(...made);
  }
  return accounts;
}

/** The server sees the CLI's keys and rate limits once they reach its read models (about a second). */
export async function waitForKeys(base: string, accounts: readonly Account[], rec: Recorder): Promise<void> {
  await sleep(1_500);
  for (const a of accounts) {
    for (let i = 0; ; i++) {
      const r = await getRecorded(base, a, 'usage', '/v1/usage', () => 0, rec);
      if (r.answer.code === null) break;
      if (i > 100) throw new Error(`${a.label}: its key is not accepted (${r.answer.status} ${r.answer.code})`);
      await sleep(100);
    }
  }
}

/**
 * Spends the account's allowance down to `target` credits remaining with screener calls (2 credits a
 * row, at most 650 rows), each sized to stay at or above the target.
 */
export async function drain(base: string, account: Account, target: number, rec: Recorder): Promise<number> {
  for (let i = 0; i < 1_000; i++) {
    const usage = await getRecorded(base, account, 'usage', '/v1/usage', () => 0, rec);
    if (usage.answer.code === 'rate_limited') {
      await sleep(1_100);
      continue;
    }
    if (usage.answer.code !== null) throw new Error(`${account.label}: GET /v1/usage answered ${usage.answer.status} ${usage.answer.code}`);
    const remaining = usage.body.credits_remaining as number;
    const gap = remaining - target;
    if (gap < 2) return remaining;
    const limit = Math.min(650, Math.floor(gap / 2));
    const r = await getRecorded(base, account, 'screener', `/v1/screener?limit=${limit}`, (b) => 2 * rowsOf(b), rec);
    if (r.answer.code === 'rate_limited') await sleep(1_100);
    else if (r.answer.code !== null) throw new Error(`${account.label}: draining, the screener answered ${r.answer.status} ${r.answer.code}`);
    else if (rowsOf(r.body) === 0) throw new Error(`${account.label}: draining, the screener returned no rows`);
  }
  throw new Error(`${account.label}: could not drain to ${target}`);
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The tickers the load asks for, the past dates the ingests restate; the accounts to drain drained (needs a free and an enterprise account). */
export async function loadInputs(
  base: string,
  accounts: readonly Account[],
  now: string,
  rec: Recorder,
  say: (line: string) => void,
): Promise<{ tickers: string[]; dates: string[] }> {
  const free = accounts.find((a) => a.tier === 'free')!;
  const enterprise = accounts.find((a) => a.tier === 'enterprise')!;
  const coverage = await getRecorded(base, free, 'coverage', '/v1/coverage', () => 0, rec);
  const tickers = (coverage.body?.tickers as string[] | undefined) ?? [];
  if (tickers.length < 20) throw new Error(`GET /v1/coverage (free) gave ${tickers.length} tickers`);
  const nowMs = Date.parse(now);
  const past = await getRecorded(
    base,
    enterprise,
    'history',
    `/v1/scores/AAPL/history?start=${isoDay(nowMs - 120 * 86_400_000)}&end=${isoDay(nowMs - 3 * 86_400_000)}`,
    (b) => (b?.rows as unknown[]).length,
    rec,
  );
  const dates = ((past.body?.rows as { date: string }[] | undefined) ?? []).map((r) => r.date);
  if (dates.length < 10) throw new Error(`the published history has ${dates.length} past trading days to restate`);
  await Promise.all(
    accounts
      .filter((a) => a.drainTo !== undefined)
      .map(async (a) => say(`${a.label}: allowance drained to ${await drain(base, a, a.drainTo!, rec)} credits remaining`)),
  );
  return { tickers, dates };
}

/** After a quiet period (`quietMs`), each account's figures as /v1/usage shows them. */
export async function finalFigures(base: string, accounts: readonly Account[], quietMs: number, rec: Recorder): Promise<Map<string, UsageFigures>> {
  const finalUsage = new Map<string, UsageFigures>();
  await sleep(quietMs);
  for (const a of accounts) {
    for (let i = 0; i < 20; i++) {
      const r = await getRecorded(base, a, 'usage', '/v1/usage', () => 0, rec);
      if (r.answer.code === null) {
        finalUsage.set(a.label, r.body as UsageFigures);
        break;
      }
      await sleep(1_100);
    }
  }
  return finalUsage;
}

/** One request loop of an account; connection errors (the server killed) are recorded and retried after a short pause. */
export async function worker(base: string, account: Account, next: () => Request, rec: Recorder, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    const { answer } = await send(base, account, next(), rec);
    if (answer.code === 'connection') await sleep(50);
    else if (account.pauseMs) await sleep(account.pauseMs);
  }
}

export interface IngestRun {
  at: number;
  ok: boolean;
  rows: number;
  written: number;
  ms: number;
  error: string | null;
  /** The rows written, in order: the last value of a (ticker, date) is what the read models must serve. */
  values: Restatement[];
}

/** One restated score row. */
export interface Restatement {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
}

/** Where a batch of restatements goes (`scores ingest` of a file, or the bus's ingest topic): rows written, or why not. */
export type RestatementSink = (values: Restatement[], n: number) => Promise<{ ok: boolean; written: number; error: string | null }>;

/** `scores ingest` of a CSV file `restatements-<n>.csv` in `dir`. */
export function cliIngest(env: NodeJS.ProcessEnv, dir: string): RestatementSink {
  return async (values, n) => {
    const file = join(dir, `restatements-${n}.csv`);
    writeFileSync(file, ['ticker,date,main_street,wall_street', ...values.map((v) => `${v.ticker},${v.date},${v.main_street},${v.wall_street}`)].join('\n') + '\n');
    const r = await cli(['ingest', file, '--json'], env);
    if (r.code !== 0) return { ok: false, written: 0, error: (r.stderr || r.stdout).trim() };
    return { ok: true, written: (JSON.parse(r.stdout) as { written: number }).written, error: null };
  };
}

/** Up to `size` (ticker, date) pairs not in `used` (added to it), with random scores. */
function pickRestatements(tickers: readonly string[], dates: readonly string[], used: Set<string>, random: () => number, size: number): Restatement[] {
  const pairs = new Map<string, Restatement>();
  for (let tries = 0; pairs.size < size && tries < 1_000; tries++) {
    const ticker = tickers[Math.floor(random() * tickers.length)]!;
    const date = dates[Math.floor(random() * dates.length)]!;
    const key = `${ticker}|${date}`;
    if (used.has(key)) continue;
    const score = () => Math.round(random() * 1000) / 10;
    pairs.set(key, { ticker, date, main_street: score(), wall_street: score() });
    used.add(key);
  }
  return [...pairs.values()];
}

/**
 * Every 1.5-3.5 s, a batch of restated scores (random values) for 20 past (ticker, date) pairs of
 * the published history, handed to `sink` (the soak: `scores ingest` of a CSV), beside the load
 * and the kills.
 *
 * Each pair is restated at most once per soak. Under the pinned clock every ingest restates "now",
 * the same instant, and the score-history read model takes a second restatement of a row at the
 * instant of the first for one already applied (it keeps the first): that is no crash-safety
 * matter, so the soak leaves it out rather than fail on it every run.
 */
export async function restatementLoop(
  sink: RestatementSink,
  tickers: readonly string[],
  dates: readonly string[],
  random: () => number,
  rec: Recorder,
  stopped: () => boolean,
): Promise<IngestRun[]> {
  const runs: IngestRun[] = [];
  const used = new Set<string>();
  let n = 0;
  while (!stopped()) {
    await sleep(1_500 + random() * 2_000);
    if (stopped()) break;
    const values = pickRestatements(tickers, dates, used, random, 20);
    if (values.length === 0) break;
    const at = rec.now();
    const t0 = performance.now();
    const r = await sink(values, ++n);
    runs.push({ at, ok: r.ok, rows: values.length, written: r.written, ms: performance.now() - t0, error: r.error, values });
  }
  return runs;
}

/** `scores ingest` of the restatements, as the soak runs them. */
export function ingestLoop(
  env: NodeJS.ProcessEnv,
  dir: string,
  tickers: readonly string[],
  dates: readonly string[],
  random: () => number,
  rec: Recorder,
  stopped: () => boolean,
): Promise<IngestRun[]> {
  return restatementLoop(cliIngest(env, dir), tickers, dates, random, rec, stopped);
}
