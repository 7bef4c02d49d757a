/**
 * The soak's table and verdict, shared by `npm run soak` (one server killed and restarted) and
 * test/e2e/scaled-deployment.test.ts (the fleet, its processes killed and replaced): the traffic,
 * the kills and recoveries, each check's result, one line per account, and why it failed.
 */
import { TIERS } from '../../src/domain/plans.js';
import type { UsageFigures } from '../../src/domain/ledger/ledger.figures.js';
import type { LedgerReport, ReplayComparison } from './checks.js';
import type { Account, Answer, IngestRun } from './load.js';

export interface Recovery {
  kill: number;
  pid: number | null;
  /** kill → /healthz 200 of the restarted process, ms (Infinity: never). */
  ms: number;
}

export interface LoadRun {
  loadMs: number;
  recoveries: Recovery[];
  aborted: string | null;
  ingestRuns: IngestRun[];
}

/** How the run was planned: the kills asked for, what was killed, the recovery bound. */
export interface RunPlan {
  kills: number;
  /** e.g. `kill -9 of the server process` */
  killed: string;
  recoveryBoundS: number;
}

/** Rows and failure reasons a caller adds to the table (the fleet's webhooks, alerts, exports, hand-overs). */
export interface Extra {
  rows: [string, string][];
  reasons: string[];
}

export interface Outcome extends LoadRun {
  accounts: Account[];
  audit: { code: number | null; report: { ok: boolean; accounts: { account_id: string; ok: boolean }[] } | null; stderr: string };
  ledger: LedgerReport;
  restatements: { checked: number; wrong: string[] };
  replay: { code: number | null; stderr: string; comparison: ReplayComparison | null };
  finalUsage: Map<string, UsageFigures>;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const n = (x: number) => x.toLocaleString('en-US');
export const secs = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : 'never');
export const examples = <T>(xs: T[], show: (x: T) => string) => xs.slice(0, 5).map((x) => `      ${show(x)}`).join('\n');

/** Prints the table (with `extra`'s rows); the reasons the run failed (none: it passed). */
export function report(o: Outcome, answers: readonly Answer[], plan: RunPlan, extra: Extra = { rows: [], reasons: [] }): string[] {
  const refusals = new Map<string, number>();
  for (const a of answers) if (a.code !== null && a.code !== 'connection') refusals.set(a.code, (refusals.get(a.code) ?? 0) + 1);
  const auditOk = o.audit.code === 0 && o.audit.report?.ok === true;
  const cmp = o.replay.comparison;
  const replayOk = o.replay.code === 0 && cmp !== null && cmp.differing.length === 0;
  const { negative, usageMismatch } = finalBalances(o);
  printSummary([...summaryRows(o, answers, plan, refusals, { auditOk, replayOk, negative, usageMismatch }), ...extra.rows]);
  printAccounts(o, answers);

  const reasons = [...verdict(o, plan, { auditOk, negative, usageMismatch }), ...extra.reasons];
  const failedIngests = o.ingestRuns.filter((r) => !r.ok);
  if (failedIngests.length) process.stdout.write(`\nnote: ${failedIngests.length} ingest runs failed, e.g. ${failedIngests[0]!.error}\n`);
  if (!refusals.has('rate_limited')) process.stdout.write('\nnote: no rate_limited refusal was seen\n');
  if (!refusals.has('credits_exhausted')) process.stdout.write('\nnote: no credits_exhausted refusal was seen\n');

  if (reasons.length) process.stdout.write(`\nFAILED:\n${reasons.map((r) => `  - ${r}`).join('\n')}\n`);
  return reasons;
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
function summaryRows(o: Outcome, answers: readonly Answer[], plan: RunPlan, refusals: Map<string, number>, c: Checked): [string, string][] {
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
    ['kills', `${o.recoveries.length} of ${plan.kills} (${plan.killed})`],
    [
      'recovery (min / median / max)',
      rec_ms.length ? `${secs(Math.min(...rec_ms))} / ${secs(median(rec_ms))} / ${secs(Math.max(...rec_ms))} (bound ${plan.recoveryBoundS} s)` : '-',
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
function printAccounts(o: Outcome, answers: readonly Answer[]): void {
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
function verdict(o: Outcome, plan: RunPlan, c: Omit<Checked, 'replayOk'>): string[] {
  const cmp = o.replay.comparison;
  const reasons: string[] = [];
  if (o.aborted) reasons.push(o.aborted);
  if (o.recoveries.length < plan.kills) reasons.push(`only ${o.recoveries.length} of ${plan.kills} kills done`);
  const slow = o.recoveries.filter((r) => !(r.ms <= plan.recoveryBoundS * 1000));
  if (slow.length) reasons.push(`recovery beyond ${plan.recoveryBoundS} s after kill ${slow.map((r) => `${r.kill} (${secs(r.ms)})`).join(', ')}`);
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
