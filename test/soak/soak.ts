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
import type { UsageFigures } from '../../src/domain/ledger/ledger.figures.js';
import { checkLedgers, checkRestatements, compareReadModels, readModelDocuments, withStore, type ReplayComparison } from './checks.js';
import {
  ACCOUNT_PLANS,
  Recorder,
  createAccounts,
  finalFigures,
  loadInputs,
  ingestLoop,
  prng,
  requestMix,
  worker,
  type Account,
  type IngestRun,
  waitForKeys,
} from './load.js';
import { cli, cliOk, freePort, ServerProcess } from './processes.js';
import { report, type LoadRun, type Outcome, type Recovery } from './report.js';

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
  const accounts = await createAccounts(ACCOUNT_PLANS, env);
  say(`created ${accounts.length} accounts with the CLI: ${accounts.map((a) => `${a.label} (${a.account_id})`).join(', ')}`);
  await waitForKeys(base, accounts, rec);
  const { tickers, dates } = await loadInputs(base, accounts, NOW, rec, say);

  const load = await runLoad(srv, base, env, accounts, tickers, dates, random);
  rec.phase = 'final';
  const finalUsage = load.aborted ? new Map<string, UsageFigures>() : await finalFigures(base, accounts, QUIET_S * 1000, rec);
  await srv.stop();
  say('server stopped (SIGTERM)');
  return verdictOf({ accounts, ...load, ...(await runChecks(env, accounts, load.ingestRuns)), finalUsage });
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

/** Prints the table; true when the soak passed. */
function verdictOf(o: Outcome): boolean {
  const reasons = report(o, rec.answers, { kills: KILLS, killed: 'kill -9 of the server process', recoveryBoundS: RECOVERY_BOUND_S });
  if (reasons.length === 0) process.stdout.write('\nPASSED: nothing lost or doubled, audit and replay agree, no negative balance, every restart in time\n');
  return reasons.length === 0;
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
