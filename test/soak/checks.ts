/**
 * What the soak checks once the server is stopped: every answered call in its account's ledger,
 * none charged twice, no balance below zero without overage, the restatements served, and the read
 * models equal to a fresh replay of the log.
 */
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { creditsRemainingNumber, usageFigures, type UsageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { evolve, foldLedger, initialLedgerState } from '../../src/domain/ledger/ledger.state.js';
import { canonicalJson, ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { bucketKey, rowsBetween, scoreHistory } from '../../projections/score-history/score-history.projection.js';
import type { Account, Answer, IngestRun } from './load.js';

export interface LedgerReport {
  /** Answered, charged calls (cost > 0) whose request id is in no ledger line of their account. */
  lost: { account: string; requestId: string; kind: string }[];
  /** Request ids on more than one ledger line (any account of the soak). */
  doubled: { requestId: string; lines: number; accounts: string[] }[];
  /** Answered calls found in another account's ledger instead of their own. */
  misattributed: { account: string; requestId: string; in: string }[];
  /** Refused calls (or calls answered with a cost of 0) that were charged anyway. */
  chargedRefusals: { account: string; requestId: string; code: string | null; cost: number }[];
  /** Charged calls whose ledger cost differs from what their answer says they cost. */
  costMismatches: { account: string; requestId: string; answered: number; charged: number }[];
  /** Ledger debits whose request got no answer (in flight when the server was killed). */
  unansweredDebits: number;
  debitLines: number;
  /** A negative balance of an account without overage, or negative prepaid credits: where it happened. */
  negative: string[];
  /** The write side's state (snapshot + tail) differs from the fold of the whole stream. */
  stateMismatches: string[];
  /** Per account: the fold's figures at the end. */
  figures: Map<string, UsageFigures>;
}

/** Reads each soak account's ledger stream from the log, call by call (`ledgerLines`), and checks the answers against it. */
export async function checkLedgers(services: Services, accounts: readonly Account[], answers: readonly Answer[], now: Date): Promise<LedgerReport> {
  const report: LedgerReport = {
    lost: [],
    doubled: [],
    misattributed: [],
    chargedRefusals: [],
    costMismatches: [],
    unansweredDebits: 0,
    debitLines: 0,
    negative: [],
    stateMismatches: [],
    figures: new Map(),
  };
  /** request id → the accounts of its ledger lines (one entry per line) and its cost. */
  const lines = new Map<string, { accounts: string[]; cost: number }>();
  for (const account of accounts) {
    const events = (await services.events.readStream(ledgerStream(account.account_id))) as unknown as LedgerEvent[];
    let state = initialLedgerState;
    for (const line of events.flatMap(ledgerLines)) {
      state = evolve(state, line);
      if (line.type !== 'CreditsDebited') continue;
      report.debitLines++;
      const d = line.data;
      const seen = lines.get(d.request_id);
      if (seen) seen.accounts.push(account.label);
      else lines.set(d.request_id, { accounts: [account.label], cost: d.cost });
      const where = `${account.label} at ${d.request_id}`;
      if (state.prepaid < 0) report.negative.push(`${where}: prepaid ${state.prepaid}`);
      if (!state.allow_overage) {
        const remaining = creditsRemainingNumber(state);
        if (d.from_overage > 0) report.negative.push(`${where}: ${d.from_overage} credits of overage with overage off`);
        if (remaining !== null && remaining < 0) report.negative.push(`${where}: credits_remaining ${remaining} with overage off`);
      }
    }
    const folded = foldLedger(events);
    report.figures.set(account.label, usageFigures(folded, now));
    const written = await services.ledger.state(account.account_id);
    if (canonicalJson(written) !== canonicalJson(folded)) report.stateMismatches.push(account.label);
  }
  for (const [requestId, l] of lines) {
    if (l.accounts.length > 1) report.doubled.push({ requestId, lines: l.accounts.length, accounts: [...new Set(l.accounts)] });
  }
  const answered = new Set<string>();
  for (const a of answers) {
    if (a.requestId === null) continue;
    answered.add(a.requestId);
    const account = accounts[a.account]!;
    const l = lines.get(a.requestId);
    if (a.code !== null || a.cost === 0) {
      if (l) report.chargedRefusals.push({ account: account.label, requestId: a.requestId, code: a.code, cost: l.cost });
      continue;
    }
    if (!l) report.lost.push({ account: account.label, requestId: a.requestId, kind: a.kind });
    else if (!l.accounts.includes(account.label)) report.misattributed.push({ account: account.label, requestId: a.requestId, in: l.accounts.join(',') });
    else if (l.cost !== a.cost) report.costMismatches.push({ account: account.label, requestId: a.requestId, answered: a.cost, charged: l.cost });
  }
  for (const requestId of lines.keys()) if (!answered.has(requestId)) report.unansweredDebits++;
  return report;
}

/** The restated values of the ingests that succeeded, last one winning, against the score-history read model. */
export async function checkRestatements(services: Services, runs: readonly IngestRun[]): Promise<{ checked: number; wrong: string[] }> {
  const expected = new Map<string, { ticker: string; date: string; main_street: number; wall_street: number }>();
  for (const run of runs) if (run.ok) for (const v of run.values) expected.set(`${v.ticker}|${v.date}`, v);
  const wrong: string[] = [];
  for (const v of expected.values()) {
    const bucket = await services.reads.get(scoreHistory, bucketKey(v.ticker, v.date.slice(0, 7)));
    const [row] = bucket ? rowsBetween([bucket], v.date, v.date) : [];
    if (!row || row.main_street !== v.main_street || row.wall_street !== v.wall_street) {
      wrong.push(`${v.ticker} ${v.date}: ingested ${v.main_street}/${v.wall_street}, read model ${row ? `${row.main_street}/${row.wall_street}` : 'no row'}`);
    }
  }
  return { checked: expected.size, wrong };
}

/** Every read model's documents, by collection, as canonical JSON (keys sorted), in id order. */
export async function readModelDocuments(services: Services): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const def of services.runner.collections) {
    const docs: string[] = [];
    for await (const doc of services.reads.scan(def)) docs.push(canonicalJson(doc));
    out.set(def.name, docs);
  }
  return out;
}

/** Opens the store of `env`, brings the read models up to the log, and runs `fn`. */
export async function withStore<T>(env: NodeJS.ProcessEnv, fn: (s: Services) => Promise<T>): Promise<T> {
  const services = await openServices(loadConfig(env));
  try {
    await services.runner.start();
    return await fn(services);
  } finally {
    await services.close();
  }
}

export interface ReplayComparison {
  collections: number;
  documents: number;
  /** Collections whose documents differ: the counts, and the first document that differs on each side. */
  differing: string[];
}

const clip = (s: string | undefined) => (s === undefined ? '(none)' : s.length > 400 ? `${s.slice(0, 400)}…` : s);

export function compareReadModels(live: Map<string, string[]>, replayed: Map<string, string[]>): ReplayComparison {
  const differing: string[] = [];
  let documents = 0;
  for (const name of new Set([...live.keys(), ...replayed.keys()])) {
    const a = live.get(name) ?? [];
    const b = replayed.get(name) ?? [];
    documents += a.length;
    if (a.length === b.length && a.every((d, i) => d === b[i])) continue;
    const bSet = new Set(b);
    const aSet = new Set(a);
    const onlyLive = a.filter((d) => !bSet.has(d));
    const onlyReplay = b.filter((d) => !aSet.has(d));
    differing.push(
      `${name}: ${a.length} documents live, ${b.length} after replay; ${onlyLive.length} only live, ${onlyReplay.length} only after replay\n` +
        `      live:   ${clip(onlyLive[0])}\n      replay: ${clip(onlyReplay[0])}`,
    );
  }
  return { collections: live.size, documents, differing };
}
