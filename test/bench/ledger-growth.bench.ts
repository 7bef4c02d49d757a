import Database from 'better-sqlite3';
import { rmSync, statSync } from 'node:fs';
import { LedgerService } from '../../commands/ledger/ledger.handler.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, info, median, report } from './stats.js';
import { catchUpReadModels } from '../../src/app/server.js';
import { fixedClock } from '../../src/core/clock.js';
import { auditAccount } from '../../queries/audit-ledger/audit-ledger.query.js';
import { auditMonth } from '../../queries/audit-ledger/ledger-month.query.js';

const NOW = '2024-03-15T12:00:00Z';
/** When the long history is written: the month before NOW's. */
const PREVIOUS_MONTH = '2024-02-15T12:00:00Z';
/** Calls of the current month, after the history. */
const MONTH_CALLS = 10_000;
/** Debits in flight at once while an account's history is written (the ledger batches them). */
const IN_FLIGHT = 500;

async function writeCalls(s: Services, accountId: string, calls: number, inFlight = IN_FLIGHT): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const i = next++;
      await s.ledger.debit(accountId, { request_id: `req_${i}`, endpoint: 'scores', channel: 'rest', cost: 1 });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** The store file's size with the WAL folded in: log, read models and indexes. */
function storeBytes(file: string): number {
  const db = new Database(file);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  return statSync(file).size;
}

/**
 * What one metered call adds to the store (its debit in the log, the usage read models, their
 * indexes), over `calls` calls of one account, `inFlight` at a time: the calls that queue while
 * an append commits are charged in one event, so the figure depends on how many arrive together.
 */
export async function bytesPerCall(calls: number, inFlight = IN_FLIGHT, debits: 'records' | 'events' = 'records'): Promise<number> {
  const dir = tempDir('scores-bench-ledger-bytes-');
  const s = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off', SCORES_LOG_DEBITS: debits })));
  try {
    const { account_id } = await createAccountWithKey(s, { tier: 'enterprise' });
    await catchUpReadModels(s, { progress: false });
    await s.runner.waitForHead();
    const before = storeBytes(s.config.sqliteFile);
    await writeCalls(s, account_id, calls, inFlight);
    await s.runner.waitForHead();
    return (storeBytes(s.config.sqliteFile) - before) / calls;
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first debit of the account by a service that has just started on the store: ms. */
async function firstCallAfterRestart(dir: string, accountId: string, snapshots: boolean): Promise<number> {
  const s = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })));
  try {
    const ledger = snapshots ? s.ledger : new LedgerService(s.events, s.clock);
    const t0 = performance.now();
    await ledger.debit(accountId, { request_id: `req_first_${Math.random()}`, endpoint: 'scores', channel: 'rest', cost: 1 });
    return performance.now() - t0;
  } finally {
    await s.close();
  }
}

/** `scores audit --account A --month M` of the current month, and the whole audit (ms), on a service just started on the store. */
async function auditTimes(dir: string, accountId: string): Promise<{ month: number; whole: number }> {
  const s = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })));
  try {
    await catchUpReadModels(s, { progress: false });
    const deps = { events: s.events, reads: s.reads, accountId };
    let t0 = performance.now();
    const month = await auditMonth({ ...deps, month: NOW.slice(0, 7) });
    const monthMs = performance.now() - t0;
    t0 = performance.now();
    const whole = await auditAccount(deps);
    const wholeMs = performance.now() - t0;
    if (!month.ok || !whole.ok) throw new Error(`the audit failed:\n${[...month.problems, ...whole.problems].join('\n')}`);
    return { month: monthMs, whole: wholeMs };
  } finally {
    await s.close();
  }
}

/**
 * Ledger growth: an account with a long history (10,000 and 1,000,000 calls recorded in the
 * month before, then 10,000 in the current month), and the first metered call after a restart,
 * which must load the account's state before it may spend. With snapshots it folds the latest
 * snapshot and at most 250 events; the baseline, measured in the same run, folds the whole
 * stream. Then the audit of the current month, whose time must not depend on the months before.
 */
export async function benchLedgerGrowth(runs: number): Promise<void> {
  const sizes = [10_000, 1_000_000];
  const first: Record<number, { snapshot: number[]; whole: number[] }> = {};
  const audits: Record<number, { month: number[]; whole: number[] }> = {};
  for (const calls of sizes) {
    const dir = tempDir('scores-bench-ledger-');
    try {
      const clock = fixedClock(PREVIOUS_MONTH);
      const s = await openServices(loadConfig(testEnv(dir, NOW, { SCORES_DEMO: 'off' })), { clock });
      let accountId: string;
      try {
        ({ account_id: accountId } = await createAccountWithKey(s, { tier: 'enterprise' }));
        const t0 = performance.now();
        await writeCalls(s, accountId, calls);
        clock.set(NOW);
        await writeCalls(s, accountId, MONTH_CALLS);
        const seconds = (performance.now() - t0) / 1000;
        const bytes = statSync(s.config.sqliteFile).size + (statSync(`${s.config.sqliteFile}-wal`, { throwIfNoEntry: false })?.size ?? 0);
        process.stderr.write(`  ${(calls + MONTH_CALLS).toLocaleString('en-US')} calls written in ${fmt(seconds)} s (${fmt((calls + MONTH_CALLS) / seconds, 0)}/s); log file ${fmt(bytes / 2 ** 20)} MiB\n`);
      } finally {
        await s.close();
      }
      first[calls] = { snapshot: [], whole: [] };
      audits[calls] = { month: [], whole: [] };
      for (let r = 0; r < runs; r++) {
        first[calls].snapshot.push(await firstCallAfterRestart(dir, accountId, true));
        first[calls].whole.push(await firstCallAfterRestart(dir, accountId, false));
        const audit = await auditTimes(dir, accountId);
        audits[calls].month.push(audit.month);
        audits[calls].whole.push(audit.whole);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const small = median(first[10_000]!.snapshot);
  const large = median(first[1_000_000]!.snapshot);
  report(`first call after restart, 1,000,000 calls (median of ${runs})`, `${fmt(large)} ms`, '< 50 ms', large < 50);
  report(`  the same with 10,000 calls, and the ratio`, `${fmt(small)} ms (${fmt(large / small, 2)}x)`, 'within 2x', large / small <= 2);
  const monthSmall = median(audits[10_000]!.month);
  const monthLarge = median(audits[1_000_000]!.month);
  report(
    `audit of the current month (${MONTH_CALLS.toLocaleString('en-US')} calls), 1,000,000 calls before it`,
    `${fmt(monthLarge)} ms`,
    'within 2x of 10,000 before',
    monthLarge / monthSmall <= 2,
  );
  info(
    '  with 10,000 calls before it, and the whole audits',
    `${fmt(monthSmall)} ms (${fmt(monthLarge / monthSmall, 2)}x); whole ${fmt(median(audits[10_000]!.whole), 0)} / ${fmt(median(audits[1_000_000]!.whole), 0)} ms`,
    '(10k / 1M before)',
  );
  const perCall = await bytesPerCall(50_000);
  report(`store bytes per metered call (log + read models + indexes, 50,000 calls, ${IN_FLIGHT} in flight)`, `${fmt(perCall, 0)} B`, '< 400 B', perCall < 400);
  // Beside each, its baseline in the same run: the log writing a lone call as a generic event (SCORES_LOG_DEBITS=events, the form before debit records).
  for (const [inFlight, target] of [
    [1, 200],
    [50, 100],
  ] as const) {
    const records = await bytesPerCall(10_000, inFlight);
    const events = await bytesPerCall(10_000, inFlight, 'events');
    report(
      `  the same, ${inFlight} in flight (10,000 calls); baseline: lone calls as generic events`,
      `${fmt(records, 0)} B (baseline ${fmt(events, 0)} B)`,
      `< ${target} B`,
      records < target,
    );
  }
  report(
    `  baseline in the same run: the whole stream folded`,
    `${fmt(median(first[10_000]!.whole))} / ${fmt(median(first[1_000_000]!.whole))} ms`,
    'slower (10k / 1M calls)',
    median(first[1_000_000]!.whole) > large,
  );
}
