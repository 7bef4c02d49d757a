/**
 * `npm run soak`: the service under mixed load with `kill -9`s, then an audit of what it kept.
 *
 * Seeds a temp data directory, starts the real server process, creates accounts on every tier with
 * the CLI (hard-stopped, drained, with packs, with overage, throttled at their tier's rate), and
 * drives REST and MCP traffic from all of them for SOAK_SECONDS while restatements are ingested
 * beside it and the server is killed (SIGKILL) SOAK_KILLS times at random moments and restarted on
 * the same directory. Every answer is recorded. Then, with the server stopped: every 200's
 * X-Request-Id must be on a ledger line of its account and none on two, `scores audit --all` must
 * pass, the read models must equal a fresh `scores replay` of a copy, no account without overage
 * may have gone below zero, and every restart must have answered /healthz within the bound.
 * Prints a table; exits 0 only when all of that holds. docs/operations.md, "Soak test".
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TIERS } from '../../src/domain/plans.js';
import type { UsageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { checkLedgers, checkRestatements, compareReadModels, readModelDocuments, withStore, type LedgerReport, type ReplayComparison } from './checks.js';
import {
  ACCOUNT_PLANS,
  Recorder,
  drain,
  getRecorded,
  ingestLoop,
  prng,
  requestMix,
  worker,
  type Account,
  type IngestRun,
} from './load.js';
import { cli, cliOk, freePort, ServerProcess } from './processes.js';

function envNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min} (got ${raw})`);
  return n;
}

const SECONDS = envNumber('SOAK_SECONDS', 60, 5);
const KILLS = Math.floor(envNumber('SOAK_KILLS', 5, 0));
const RECOVERY_BOUND_S = envNumber('SOAK_RECOVERY_BOUND_SECONDS', 30, 1);
const QUIET_S = envNumber('SOAK_QUIET_SECONDS', 3, 0);
const SEED = Math.floor(envNumber('SOAK_SEED', Math.floor(Math.random() * 2 ** 31), 0));
const NOW = process.env['SOAK_NOW'] || '2019-06-14T12:00:00Z';
const KEEP = process.env['SOAK_KEEP'] === '1';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rec = new Recorder();
const say = (line: string) => process.stdout.write(`[${(rec.now() / 1000).toFixed(1).padStart(6)}s] ${line}\n`);
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const work = mkdtempSync(join(tmpdir(), 'scores-soak-'));
const dataDir = join(work, 'data');
const replayDir = join(work, 'replay');
let server = null as ServerProcess | null;

process.once('SIGINT', () => {
  void (async () => {
    await server?.kill9().catch(() => undefined);
    process.stdout.write(`\ninterrupted; data kept in ${work}\n`);
    process.exit(130);
  })();
});

interface Recovery {
  kill: number;
  pid: number | null;
  /** kill → /healthz 200 of the restarted process, ms (Infinity: never). */
  ms: number;
}

async function main(): Promise<boolean> {
  const random = prng(SEED);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SCORES_DATA_DIR: dataDir,
    SCORES_NOW: NOW,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env['LOG_LEVEL'] || 'warn',
    SCORES_EXPORTS_SCHEDULE: 'off',
  };
  process.stdout.write(`soak: ${SECONDS} s of load, ${KILLS} kills, recovery bound ${RECOVERY_BOUND_S} s, seed ${SEED}, clock ${NOW}\n  work dir ${work}\n`);

  // ---- Setup: the demo dataset, the server, the accounts.
  say('seeding the demo dataset (scores seed)');
  await cliOk(['seed', '--json'], env);
  const srv = (server = new ServerProcess(base, env, join(work, 'server.log')));
  srv.start();
  await srv.waitHealthy(120_000);
  say(`server up on ${base} (pid ${srv.pid})`);
  const accounts = await createAccounts(env);
  say(`created ${accounts.length} accounts with the CLI: ${accounts.map((a) => `${a.label} (${a.account_id})`).join(', ')}`);
  await waitForKeys(base, accounts);
  const { tickers, dates } = await loadInputs(base, accounts);

  const load = await runLoad(srv, base, env, accounts, tickers, dates, random);
  const finalUsage = await finalFigures(base, accounts, load.aborted);
  await srv.stop();
  say('server stopped (SIGTERM)');
  return report({ accounts, ...load, ...(await runChecks(env, accounts, load.ingestRuns)), finalUsage });
}

/** Every account of ACCOUNT_PLANS, made with the CLI, three at a time (each is a few CLI runs: create, overage, pack, rate limit). */
async function createAccounts(env: NodeJS.ProcessEnv): Promise<Account[]> {
  const accounts: Account[] = [];
  for (let i = 0; i < ACCOUNT_PLANS.length; i += 3) {
    const made = await Promise.all(
      ACCOUNT_PLANS.slice(i, i + 3).map(async (plan, j) => {
        const issued = JSON.parse(await cliOk(['keys', 'create', '--tier', plan.tier, ...(plan.pro ? ['--pro'] : []), '--json'], env)) as {
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
async function waitForKeys(base: string, accounts: Account[]): Promise<void> {
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

/** The tickers the load asks for, the past dates the ingests restate; the accounts to drain drained. */
async function loadInputs(base: string, accounts: Account[]): Promise<{ tickers: string[]; dates: string[] }> {
  const free = accounts.find((a) => a.tier === 'free')!;
  const enterprise = accounts.find((a) => a.tier === 'enterprise')!;
  const coverage = await getRecorded(base, free, 'coverage', '/v1/coverage', () => 0, rec);
  const tickers = (coverage.body?.tickers as string[] | undefined) ?? [];
  if (tickers.length < 20) throw new Error(`GET /v1/coverage (free) gave ${tickers.length} tickers`);
  const nowMs = Date.parse(NOW);
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

interface LoadRun {
  loadMs: number;
  recoveries: Recovery[];
  aborted: string | null;
  ingestRuns: IngestRun[];
}

/** The load, the ingests and the kills, for SOAK_SECONDS (less when a restart fails). */
async function runLoad(
  srv: ServerProcess,
  base: string,
  env: NodeJS.ProcessEnv,
  accounts: Account[],
  tickers: string[],
  dates: string[],
  random: () => number,
): Promise<LoadRun> {
  rec.phase = 'load';
  const loadStart = rec.now();
  let stopped = false;
  const isStopped = () => stopped;
  const next = requestMix(tickers, isoDay(Date.parse(NOW) - 25 * 86_400_000), random);
  const workers = accounts.flatMap((a) => Array.from({ length: a.workers }, () => worker(base, a, next, rec, isStopped)));
  const ingests = ingestLoop(env, work, tickers, dates, random, rec, isStopped);
  say(`load started: ${workers.length} request loops over ${accounts.length} accounts, restatement ingests every 1.5-3.5 s`);
  const progress = setInterval(() => {
    const load = rec.answers.filter((x) => x.phase === 'load');
    say(`${load.length} requests, ${load.filter((x) => x.code === null).length} answered`);
  }, 10_000);

  const { recoveries, aborted, upSince } = await killAndRestart(srv, loadStart, random);
  if (!aborted) await sleep(Math.max(0, Math.max(loadStart + SECONDS * 1000, upSince + 2_000) - rec.now()));
  const loadEnd = rec.now();
  stopped = true;
  clearInterval(progress);
  await Promise.all(workers);
  const ingestRuns = await ingests;
  say('load stopped');
  return { loadMs: loadEnd - loadStart, recoveries, aborted, ingestRuns };
}

/** SOAK_KILLS kill -9s of the server at random moments, each followed by a restart on the same directory. */
async function killAndRestart(srv: ServerProcess, loadStart: number, random: () => number): Promise<{ recoveries: Recovery[]; aborted: string | null; upSince: number }> {
  const recoveries: Recovery[] = [];
  let upSince = rec.now();
  let aborted: string | null = null;
  const slot = (SECONDS * 1000) / Math.max(KILLS, 1);
  for (let i = 0; i < KILLS; i++) {
    const at = Math.max(loadStart + (i + 0.2 + 0.6 * random()) * slot, upSince + 1_000);
    await sleep(Math.max(0, at - rec.now()));
    const pid = srv.pid;
    const t0 = performance.now();
    await srv.kill9();
    srv.start();
    try {
      await srv.waitHealthy(Math.max(2 * RECOVERY_BOUND_S, 60) * 1000);
      const ms = performance.now() - t0;
      recoveries.push({ kill: i + 1, pid, ms });
      upSince = rec.now();
      say(`kill ${i + 1}/${KILLS}: pid ${pid} killed (kill -9); restarted as pid ${srv.pid}, /healthz 200 after ${(ms / 1000).toFixed(2)} s`);
    } catch (err) {
      recoveries.push({ kill: i + 1, pid, ms: Infinity });
      aborted = `kill ${i + 1}: the server did not come back: ${(err as Error).message}`;
      say(aborted);
      break;
    }
  }
  return { recoveries, aborted, upSince };
}

/** A quiet period, then each account's figures as /v1/usage shows them (none after an aborted load). */
async function finalFigures(base: string, accounts: Account[], aborted: string | null): Promise<Map<string, UsageFigures>> {
  rec.phase = 'final';
  const finalUsage = new Map<string, UsageFigures>();
  if (aborted) return finalUsage;
  await sleep(QUIET_S * 1000);
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

/** The checks, on the stopped store: the audit, the ledgers and restatements, a replay on a copy. */
async function runChecks(env: NodeJS.ProcessEnv, accounts: Account[], ingestRuns: IngestRun[]): Promise<Pick<Outcome, 'audit' | 'ledger' | 'restatements' | 'replay'>> {
  say('scores audit --all --json');
  const audit = await cli(['audit', '--all', '--json'], env);
  let auditReport: Outcome['audit']['report'] = null;
  try {
    auditReport = JSON.parse(audit.stdout) as typeof auditReport;
  } catch {
    // reported below
  }
  say('reading the ledgers and the read models');
  const { ledger, restatements, live } = await withStore(env, async (s) => ({
    ledger: await checkLedgers(s, accounts, rec.answers, new Date(NOW)),
    restatements: await checkRestatements(s, ingestRuns),
    live: await readModelDocuments(s),
  }));
  say('scores replay on a copy of the data directory');
  cpSync(dataDir, replayDir, { recursive: true });
  const replayEnv = { ...env, SCORES_DATA_DIR: replayDir };
  const replay = await cli(['replay', '--json'], replayEnv);
  const comparison: ReplayComparison | null = replay.code === 0 ? compareReadModels(live, await withStore(replayEnv, readModelDocuments)) : null;
  return {
    audit: { code: audit.code, report: auditReport, stderr: audit.stderr },
    ledger,
    restatements,
    replay: { code: replay.code, stderr: replay.stderr, comparison },
  };
}

interface Outcome extends LoadRun {
  accounts: Account[];
  audit: { code: number | null; report: { ok: boolean; accounts: { account_id: string; ok: boolean }[] } | null; stderr: string };
  ledger: LedgerReport;
  restatements: { checked: number; wrong: string[] };
  replay: { code: number | null; stderr: string; comparison: ReplayComparison | null };
  finalUsage: Map<string, UsageFigures>;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const n = (x: number) => x.toLocaleString('en-US');
const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : 'never');
const examples = <T>(xs: T[], show: (x: T) => string) => xs.slice(0, 5).map((x) => `      ${show(x)}`).join('\n');


/** Prints the table; true when the soak passed. */
function report(o: Outcome): boolean {
  const answers = rec.answers;
  const refusals = new Map<string, number>();
  for (const a of answers) if (a.code !== null && a.code !== 'connection') refusals.set(a.code, (refusals.get(a.code) ?? 0) + 1);
  const auditOk = o.audit.code === 0 && o.audit.report?.ok === true;
  const cmp = o.replay.comparison;
  const replayOk = o.replay.code === 0 && cmp !== null && cmp.differing.length === 0;
  const { negative, usageMismatch } = finalBalances(o);
  printSummary(summaryRows(o, refusals, { auditOk, replayOk, negative, usageMismatch }));
  printAccounts(o);

  const reasons = verdict(o, { auditOk, negative, usageMismatch });
  const failedIngests = o.ingestRuns.filter((r) => !r.ok);
  if (failedIngests.length) process.stdout.write(`\nnote: ${failedIngests.length} ingest runs failed, e.g. ${failedIngests[0]!.error}\n`);
  if (!refusals.has('rate_limited')) process.stdout.write('\nnote: no rate_limited refusal was seen\n');
  if (!refusals.has('credits_exhausted')) process.stdout.write('\nnote: no credits_exhausted refusal was seen\n');

  if (reasons.length) {
    process.stdout.write(`\nFAILED:\n${reasons.map((r) => `  - ${r}`).join('\n')}\n`);
    return false;
  }
  process.stdout.write('\nPASSED: nothing lost or doubled, audit and replay agree, no negative balance, every restart in time\n');
  return true;
}

/** Final figures: /v1/usage as served, against the ledger fold; no balance below zero without overage. */
function finalBalances(o: Outcome): { negative: string[]; usageMismatch: string[] } {
  const negative = [...o.ledger.negative];
  const usageMismatch: string[] = [];
  for (const a of o.accounts) {
    const served = o.finalUsage.get(a.label);
    const folded = o.ledger.figures.get(a.label);
    if (!served || !folded) {
      if (!o.aborted) usageMismatch.push(`${a.label}: no final /v1/usage`);
      continue;
    }
    if (served.prepaid_credits < 0) negative.push(`${a.label}: /v1/usage prepaid_credits ${served.prepaid_credits}`);
    if (!served.allow_overage && served.credits_remaining !== null && served.credits_remaining < 0) {
      negative.push(`${a.label}: /v1/usage credits_remaining ${served.credits_remaining} with overage off`);
    }
    for (const k of ['used_this_month', 'credits_remaining', 'prepaid_credits', 'overage_credits', 'allow_overage'] as const) {
      if (served[k] !== folded[k]) usageMismatch.push(`${a.label}: /v1/usage ${k} ${String(served[k])}, ledger fold ${String(folded[k])}`);
    }
  }
  return { negative, usageMismatch };
}

interface Checked {
  auditOk: boolean;
  replayOk: boolean;
  negative: string[];
  usageMismatch: string[];
}

/** The summary table: the traffic, the kills, and each check's result. */
function summaryRows(o: Outcome, refusals: Map<string, number>, c: Checked): [string, string][] {
  const answers = rec.answers;
  const load = answers.filter((a) => a.phase === 'load');
  const answered = answers.filter((a) => a.code === null);
  const connection = answers.filter((a) => a.code === 'connection').length;
  const charged = answered.filter((a) => a.cost > 0);
  const rec_ms = o.recoveries.map((r) => r.ms);
  const downMs = rec_ms.filter(Number.isFinite).reduce((s, x) => s + x, 0);
  const loadAnswered = load.filter((a) => a.code === null).length;
  const mcp = answers.filter((a) => a.channel === 'mcp').length;
  const cmp = o.replay.comparison;
  const ingestOk = o.ingestRuns.filter((r) => r.ok);
  return [
    ['requests', `${n(answers.length)} (${n(load.length)} under load; REST ${n(answers.length - mcp)}, MCP ${n(mcp)})`],
    ['answered (200)', `${n(answered.length)} (${n(charged.length)} charged, ${n(answered.length - charged.length)} free or empty)`],
    ...[...refusals.entries()].sort((x, y) => y[1] - x[1]).map(([code, count]): [string, string] => [`refused: ${code}`, n(count)]),
    ['no answer (server down)', `${n(connection)} (connection refused or reset while killed)`],
    ['kills', `${o.recoveries.length} of ${KILLS} (kill -9 of the server process)`],
    [
      'recovery (min / median / max)',
      rec_ms.length ? `${secs(Math.min(...rec_ms))} / ${secs(median(rec_ms))} / ${secs(Math.max(...rec_ms))} (bound ${RECOVERY_BOUND_S} s)` : '-',
    ],
    [
      'throughput held',
      `${n(Math.round(loadAnswered / (o.loadMs / 1000)))} answered/s over ${(o.loadMs / 1000).toFixed(1)} s (${n(Math.round(loadAnswered / Math.max((o.loadMs - downMs) / 1000, 0.001)))}/s while up)`,
    ],
    ['restatement ingests', `${ingestOk.length} ok, ${o.ingestRuns.length - ingestOk.length} failed; ${n(ingestOk.reduce((s, r) => s + r.written, 0))} rows written; ${o.restatements.checked - o.restatements.wrong.length}/${o.restatements.checked} served as ingested`],
    ['ledger debit lines', `${n(o.ledger.debitLines)} (${n(o.ledger.unansweredDebits)} charged whose answer was cut off by a kill)`],
    ['lost (200s missing from ledgers)', n(o.ledger.lost.length + o.ledger.misattributed.length)],
    ['doubled (request ids charged twice)', n(o.ledger.doubled.length)],
    ['charged refusals', n(o.ledger.chargedRefusals.length)],
    ['cost mismatches', n(o.ledger.costMismatches.length)],
    ['audit --all', c.auditOk ? `ok (${o.audit.report?.accounts.length} accounts)` : `FAILED (exit ${o.audit.code})`],
    ['read models = fresh replay', c.replayOk && cmp ? `ok (${cmp.collections} collections, ${n(cmp.documents)} documents)` : 'FAILED'],
    ['negative balances (overage off)', c.negative.length ? `${c.negative.length}` : 'none'],
    ['/v1/usage = ledger fold', c.usageMismatch.length ? `${c.usageMismatch.length} differences` : 'yes'],
  ];
}

function printSummary(rows: [string, string][]): void {
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(`\n${'-'.repeat(width + 60)}\n`);
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(width)}  ${v}\n`);
  process.stdout.write(`${'-'.repeat(width + 60)}\n`);
}

/** One line per account, by tier. */
function printAccounts(o: Outcome): void {
  const answers = rec.answers;
  process.stdout.write(`\n${'account'.padEnd(18)} ${'tier'.padEnd(10)} ${'setup'.padEnd(46)} ${'requests'.padStart(8)} ${'200'.padStart(7)} ${'credits'.padStart(8)}  refused  /  final remaining+prepaid\n`);
  for (const a of [...o.accounts].sort((x, y) => TIERS.indexOf(x.tier) - TIERS.indexOf(y.tier))) {
    const mine = answers.filter((x) => x.account === a.index);
    const codes = new Map<string, number>();
    for (const x of mine) if (x.code !== null && x.code !== 'connection') codes.set(x.code, (codes.get(x.code) ?? 0) + 1);
    const setup = [
      a.pro ? 'pro' : '',
      a.drainTo !== undefined ? `drained to ${a.drainTo}` : '',
      a.pack ? `pack ${a.pack}` : '',
      a.overage ? 'overage on' : '',
      a.rate === 'tier' ? 'tier rate' : a.rate === 'unlimited' ? 'unlimited rate' : `${a.rate}/s`,
    ].filter(Boolean);
    const u = o.finalUsage.get(a.label);
    const left = u ? (u.credits_remaining === null ? 'unmetered' : `${u.credits_remaining} + ${u.prepaid_credits}`) : '?';
    process.stdout.write(
      `${a.label.padEnd(18)} ${a.tier.padEnd(10)} ${setup.join(', ').padEnd(46)} ${String(mine.length).padStart(8)} ${String(mine.filter((x) => x.code === null).length).padStart(7)} ${String(mine.reduce((s, x) => s + x.cost, 0)).padStart(8)}  ${[...codes].map(([c, k]) => `${c} ${k}`).join(', ') || '-'}  /  ${left}\n`,
    );
  }
}

/** Why the soak failed: one reason per failed check (none: it passed). */
function verdict(o: Outcome, c: Omit<Checked, 'replayOk'>): string[] {
  const cmp = o.replay.comparison;
  const reasons: string[] = [];
  if (o.aborted) reasons.push(o.aborted);
  if (o.recoveries.length < KILLS) reasons.push(`only ${o.recoveries.length} of ${KILLS} kills done`);
  const slow = o.recoveries.filter((r) => !(r.ms <= RECOVERY_BOUND_S * 1000));
  if (slow.length) reasons.push(`recovery beyond ${RECOVERY_BOUND_S} s after kill ${slow.map((r) => `${r.kill} (${secs(r.ms)})`).join(', ')}`);
  if (o.ledger.lost.length) reasons.push(`lost: ${o.ledger.lost.length} answered calls missing from their ledger\n${examples(o.ledger.lost, (x) => `${x.account} ${x.kind} ${x.requestId}`)}`);
  if (o.ledger.misattributed.length) reasons.push(`${o.ledger.misattributed.length} answered calls charged to another account\n${examples(o.ledger.misattributed, (x) => `${x.account} ${x.requestId} in ${x.in}`)}`);
  if (o.ledger.doubled.length) reasons.push(`doubled: ${o.ledger.doubled.length} request ids on several ledger lines\n${examples(o.ledger.doubled, (x) => `${x.requestId} ${x.lines} lines in ${x.accounts.join(',')}`)}`);
  if (o.ledger.chargedRefusals.length) reasons.push(`${o.ledger.chargedRefusals.length} refused or free answers charged\n${examples(o.ledger.chargedRefusals, (x) => `${x.account} ${x.requestId} answered ${x.code ?? 'ok, cost 0'}, charged ${x.cost}`)}`);
  if (o.ledger.costMismatches.length) reasons.push(`${o.ledger.costMismatches.length} calls charged another cost than they returned\n${examples(o.ledger.costMismatches, (x) => `${x.account} ${x.requestId} returned ${x.answered}, charged ${x.charged}`)}`);
  if (o.ledger.stateMismatches.length) reasons.push(`the write side's ledger state differs from the fold of the log: ${o.ledger.stateMismatches.join(', ')}`);
  if (!c.auditOk) {
    const failing = o.audit.report?.accounts.filter((a) => !a.ok).map((a) => a.account_id) ?? [];
    reasons.push(`scores audit --all failed (exit ${o.audit.code})${failing.length ? `: ${failing.join(', ')}` : ''}${o.audit.stderr ? `\n      ${o.audit.stderr.trim().split('\n').slice(0, 5).join('\n      ')}` : ''}`);
  }
  if (o.replay.code !== 0) reasons.push(`scores replay on the copy failed (exit ${o.replay.code}): ${o.replay.stderr.trim()}`);
  else if (cmp && cmp.differing.length) reasons.push(`read models differ from a fresh replay:\n${cmp.differing.map((d) => `    ${d}`).join('\n')}`);
  if (c.negative.length) reasons.push(`negative balances:\n${examples(c.negative, (x) => x)}`);
  if (c.usageMismatch.length) reasons.push(`final /v1/usage differs from the ledger fold:\n${examples(c.usageMismatch, (x) => x)}`);
  if (o.restatements.wrong.length) reasons.push(`${o.restatements.wrong.length} ingested restatements not served as ingested\n${examples(o.restatements.wrong, (x) => x)}`);
  return reasons;
}

let passed = false;
try {
  passed = await main();
} catch (err) {
  process.stdout.write(`\nsoak aborted: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  if (server) process.stdout.write(`server log (tail):\n${server.logTail()}\n`);
} finally {
  await server?.stop().catch(() => undefined);
}
if (passed && !KEEP) rmSync(work, { recursive: true, force: true });
else process.stdout.write(`data, server log and ingest files kept in ${work}\n`);
process.exit(passed ? 0 : 1);
