import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { INGEST_DLQ_TOPIC, INGEST_TOPIC } from '../../commands/ingest/ingest.reactor.js';
import { DispatchCheckpoint } from '../../commands/deliver-webhooks/dispatch-checkpoint.js';
import { KafkaEventBus } from '../../infra/kafka/event-bus.js';
import { allProjections } from '../../projections/index.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { startFleet, type Fleet } from '../../src/app/fleet/fleet.js';
import { checkLedgers, checkRestatements, compareReadModels, readModelDocuments, withStore } from '../soak/checks.js';
import {
  Recorder,
  createAccounts,
  finalFigures,
  loadInputs,
  prng,
  requestMix,
  restatementLoop,
  waitForKeys,
  worker,
  type Account,
  type AccountPlan,
  type IngestRun,
  type RestatementSink,
} from '../soak/load.js';
import { cli } from '../soak/processes.js';
import { programArgs } from '../support/processes.js';
import { n, report, secs, type Outcome, type Recovery } from '../soak/report.js';
import { checkAlerts, checkExports, checkWebhooks, outboxDir, type AlertReport, type ExportReport, type WebhookReport } from '../support/fleet-checks.js';
import { handOver, kill9, ownedJobs, startMember, stopMember, waitOk, type Member } from '../support/fleet-members.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/receiver-certificate.js';
import { FLEET_ENGINES, FLEET_READ_STORE, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';

const NOW = '2019-03-29T12:00:00Z';
/** Seconds of load (SCALED_SECONDS); the kills happen within them, the load runs on until the last hand-over is seen. */
const LOAD_MS = Number(process.env['SCALED_SECONDS'] || 60) * 1000;
/** The nightly export's default time: at the pinned clock its latest scheduled time is the day before, 22:30. */
const SCHEDULE = '30 22 * * *';
/**
 * A replaced process must answer /healthz within this (an API process listens once its read models
 * follow the log: over a minute on a loaded 2-core machine); a leased job must run on a surviving
 * worker within HAND_OVER_BOUND_MS (the lease's 15 s ttl, then the job's own start).
 */
const RECOVERY_BOUND_S = 150;
const HAND_OVER_BOUND_MS = 60_000;

/**
 * Every tier; a hard-stopped free account and an overage account, both drained first so their alerts
 * fire under load. One request loop each with a short pause: the load a 2-core machine running the
 * whole fleet and the engines can project as fast as it is metered (more, and the read models fall
 * behind the log for good, so a replacement API process, which listens once it follows the log,
 * never starts).
 */
const PLANS: readonly AccountPlan[] = [
  { label: 'free-stop', tier: 'free', overage: false, drainTo: 150, rate: 'tier', email: 'free-stop@example.com', workers: 1, pauseMs: 50 },
  { label: 'hobbyist-overage', tier: 'hobbyist', overage: true, drainTo: 300, rate: 'tier', email: 'overage@example.com', workers: 1, pauseMs: 50 },
  { label: 'builder', tier: 'builder', overage: false, rate: 'tier', email: 'builder@example.com', workers: 1, pauseMs: 50 },
  { label: 'quant', tier: 'quant', overage: false, rate: 'tier', workers: 1, pauseMs: 50 },
  { label: 'enterprise', tier: 'enterprise', overage: false, rate: 'tier', workers: 1, pauseMs: 50 },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `promise`, or an error naming `what` once `ms` have passed: a hung engine fails the test instead of stalling it. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms / 1000} s`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A read store that stops answering (FerretDB has been seen to: docs/scaling.md) fails the test at once rather than hang it. */
async function pingReadStore(sandbox: EnginesSandbox): Promise<void> {
  const store = sandbox.readModels().open();
  try {
    await within(10_000, `the read store (${sandbox.readStore}) does not answer a read`, store.checkpoint('ping'));
  } finally {
    await within(5_000, 'closing the read store', store.close()).catch(() => undefined);
  }
}

/** One kill -9 during the load: which process, when it was replaced, and (a worker) each leased job's hand-over. */
interface Kill {
  role: Member['role'];
  pid: number | undefined;
  /** kill → /healthz 200 of the replacement, ms. */
  recoveryMs: number;
  /** The leased jobs the killed worker ran → ms from the kill until another worker's /readyz shows it running. */
  handOver: Map<string, number>;
}

/**
 * The scaled deployment of issue 31 under mixed load, on the real engines: `scores fleet up`'s two API
 * processes behind the round-robin front and two workers, REST and MCP over every tier, restatements
 * through Kafka, webhooks to a local HTTPS receiver, while one API process and one worker are killed
 * (-9) twice each and replaced. Then the soak's checks (test/soak) and the fleet's own
 * (test/support/fleet-checks.ts); prints the soak's table with the hand-over times. docs/scaling.md,
 * "The scaled-deployment test".
 */
describe('The scaled deployment: the fleet under mixed load, kill -9 of API processes and workers', function () {
  this.timeout(600_000);
  const unset = unsetEngines(FLEET_ENGINES);
  let sandbox: EnginesSandbox | null = null;
  let database: string;
  let dir: string;
  // Made again when the test starts: its times count from there, not from when mocha loaded the file.
  let rec = new Recorder();
  const say = (line: string) => console.log(`      [${(rec.now() / 1000).toFixed(1).padStart(6)}s] ${line}`);
  let env: NodeJS.ProcessEnv;
  let receiver: HttpsReceiver | null = null;
  let bus: KafkaEventBus | null = null;
  let fleet: Fleet | null = null;
  const members: Member[] = [];
  /** What the ingest job dead-lettered: a valid restatement there is one the log never got. */
  const deadLetters: string[] = [];
  /** Every replacement spawned, killed at the end even when it never listened. */
  const children: ChildProcess[] = [];

  before(async function () {
    rec = new Recorder();
    if (unset.length > 0) return;
    sandbox = await openEnginesSandbox('scaled', NOW, { kafka: true, readStore: FLEET_READ_STORE });
    ({ database, dir } = sandbox);
    await pingReadStore(sandbox);
    receiver = await startHttpsReceiver(dir);
    env = { ...sandbox.env, WEBHOOK_CA_FILE: receiver.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8', SCORES_EXPORTS_SCHEDULE: SCHEDULE };
    bus = new KafkaEventBus({ brokers: process.env['KAFKA_BROKERS']!.split(','), clientId: 'scores-scaled-e2e', prefix: sandbox.prefix, logLevel: 'nothing' });
    await bus.subscribe({ topic: INGEST_DLQ_TOPIC, group: 'scaled-test-dead-letters', fromBeginning: true, handler: async (m) => void deadLetters.push(m.headers?.['reason'] ?? m.value) });
  });

  after(async () => {
    if (unset.length > 0) return;
    await fleet?.stop().catch(() => undefined);
    await Promise.all(members.map((m) => kill9(m)));
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await bus?.close().catch(() => undefined);
    await receiver?.close();
    await sandbox?.drop([`${database}_replay`]);
  });

  it('loses no acknowledged call, doubles no decision, email or bundle, and equals a replay after two kills of an API process and two of a worker', async function () {
    if (unset.length > 0) {
      console.log(`      skipped: runs on the engines only; ${unset.join(', ')} unset (npm run engines prints them)`);
      this.skip();
    }
    // The fleet's processes run the CLI as the tests' other processes do (test/fleet/fleet.test.ts).
    process.argv[1] = programArgs('src/app/cli/bin.ts').at(-1)!;
    say('starting the fleet: 2 workers, 2 API processes, the front');
    // startFleet bounds each process's start itself (and stops those started when one fails): no process is left behind.
    fleet = await startFleet({ apis: 2, workers: 2, port: 0, host: '127.0.0.1', env, timeoutMs: 240_000 });
    members.push(...fleet.processes);
    const base = fleet.url;
    say(`fleet up at ${base}: ${fleet.processes.map((p) => `${p.role} ${p.pid}`).join(', ')}`);

    const accounts = await within(120_000, 'creating the accounts with the CLI', createAccounts(PLANS, env));
    await within(60_000, 'the API processes accepting the new keys', waitForKeys(base, accounts, rec));
    const { tickers, dates } = await within(120_000, 'draining the hard-stop and overage accounts', loadInputs(base, accounts, NOW, rec, say));
    const hooks = await registerWebhooks(base, accounts);
    say(`${accounts.length} accounts, ${hooks.length} webhooks to https://localhost:${receiver!.port}`);

    const load = await runLoad(base, accounts, tickers, dates);
    say(`load stopped after ${(load.loadMs / 1000).toFixed(1)} s; waiting for the jobs to settle`);
    const services = await openServices(loadConfig(env));
    try {
      await settle(services, hooks, accounts, load.ingestRuns);
      rec.phase = 'final';
      const finalUsage = await within(60_000, 'the final /v1/usage of each account', finalFigures(base, accounts, 2_000, rec));
      say('stopping the fleet (SIGTERM)');
      await within(60_000, 'stopping the fleet', stopAll());
      const outcome = await runChecks(services, accounts, load, finalUsage);
      const fleetChecks = await within(60_000, 'reading the log for the fleet checks', fleetReport(services, hooks, accounts));
      const reasons = report(outcome, rec.answers, { kills: 4, killed: 'kill -9 of an API process twice, of a worker twice; each replaced', recoveryBoundS: RECOVERY_BOUND_S }, extraOf(load.kills, fleetChecks));
      expect(reasons, reasons.join('\n')).to.deep.equal([]);
    } finally {
      await services.close();
    }
  });

  /** A score_move webhook of quant, and both event types of enterprise, to the local HTTPS receiver. */
  async function registerWebhooks(base: string, accounts: readonly Account[]): Promise<number[]> {
    const ids: number[] = [];
    for (const [label, type] of [['quant', 'score_move'], ['enterprise', 'score_move'], ['enterprise', 'divergence_event']] as const) {
      const account = accounts.find((a) => a.label === label)!;
      const res = await fetch(`${base}/v1/webhooks`, {
        method: 'POST',
        headers: { 'X-API-Key': account.key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ event_type: type, url: `https://localhost:${receiver!.port}/hooks/${label}/${type}` }),
      });
      expect(res.status, await res.clone().text()).to.equal(201);
      ids.push(((await res.json()) as { id: number }).id);
    }
    return ids;
  }

  /** Restatements published on this run's ingest topic, as an upstream feed would: what the `ingest` job consumes. */
  const kafkaIngest: RestatementSink = async (values) => {
    try {
      await bus!.publish(INGEST_TOPIC, values.map((v) => ({ key: v.ticker, value: JSON.stringify({ type: 'score', ...v }) })));
      return { ok: true, written: values.length, error: null };
    } catch (err) {
      return { ok: false, written: 0, error: (err as Error).message };
    }
  };

  /** The load, the restatements and the kills; the load runs LOAD_MS, longer when the last hand-over ends later. */
  async function runLoad(base: string, accounts: Account[], tickers: string[], dates: string[]): Promise<{ loadMs: number; ingestRuns: IngestRun[]; kills: Kill[] }> {
    rec.phase = 'load';
    const random = prng(31);
    const loadStart = performance.now();
    let stopped = false;
    const next = requestMix(tickers, '2019-03-04', random);
    const loops = accounts.flatMap((a) => Array.from({ length: a.workers }, () => worker(base, a, next, rec, () => stopped)));
    const ingests = restatementLoop(kafkaIngest, tickers, dates, random, rec, () => stopped);
    say(`load started: ${loops.length} request loops, restatements to Kafka every 1.5-3.5 s`);
    const at = (fraction: number) => sleep(Math.max(0, loadStart + fraction * LOAD_MS - performance.now()));
    const [apiKills, workerKills] = await Promise.all([
      (async () => [await at(0.1).then(() => killApi(0)), await at(0.5).then(() => killApi(1))])(),
      (async () => [await at(0.2).then(() => killWorker()), await at(0.55).then(() => killWorker())])(),
    ]);
    await sleep(Math.max(2_000, loadStart + LOAD_MS - performance.now()));
    stopped = true;
    const loadMs = performance.now() - loadStart;
    await within(60_000, 'the request loops ending', Promise.all(loops));
    return { loadMs, ingestRuns: await ingests, kills: [...apiKills, ...workerKills] };
  }

  /** kill -9 of the API process at `index`, replaced on its port (the front's target), which must answer /healthz again. */
  async function killApi(index: number): Promise<Kill> {
    const apis = members.filter((m) => m.role === 'api' && m.child.exitCode === null && m.child.signalCode === null);
    const victim = apis[index % apis.length]!;
    const killedAt = performance.now();
    await kill9(victim);
    const kill: Kill = { role: 'api', pid: victim.child.pid, recoveryMs: Infinity, handOver: new Map() };
    try {
      const replacement = await replace('api', Number(new URL(victim.url).port));
      kill.recoveryMs = performance.now() - killedAt;
      say(`kill -9 of API process ${kill.pid}; replaced on ${replacement.url} (pid ${replacement.child.pid}), /healthz 200 after ${secs(kill.recoveryMs)}`);
    } catch (err) {
      say(`kill -9 of API process ${kill.pid}; not replaced: ${(err as Error).message.split('\n')[0]}`);
    }
    return kill;
  }

  /** A replacement on `port` (0: any), kept in `members` once it answers /healthz (within RECOVERY_BOUND_S). */
  async function replace(role: Member['role'], port: number): Promise<Member> {
    const end = performance.now() + RECOVERY_BOUND_S * 1000;
    const replacement = await startMember(role, env, port, RECOVERY_BOUND_S * 1000, (child) => children.push(child));
    members.push(replacement);
    await waitOk(replacement.url, '/healthz', Math.max(1_000, end - performance.now()));
    return replacement;
  }

  /**
   * kill -9 of the worker that runs the most leased jobs, once every worker's jobs have started
   * (/readyz 200: a replacement takes a lease only after its projections caught up); a replacement
   * started; each job's hand-over to a surviving worker timed.
   */
  async function killWorker(): Promise<Kill> {
    const alive = () => members.filter((m) => m.role === 'worker' && m.child.exitCode === null && m.child.signalCode === null);
    const readyWithin = RECOVERY_BOUND_S * 1000;
    await Promise.all(alive().map((w) => waitOk(w.url, '/readyz', readyWithin).catch(() => say(`worker ${w.child.pid}: /readyz not 200 within ${readyWithin / 1000} s`))));
    const owned = await Promise.all(alive().map(async (w) => ({ w, jobs: await ownedJobs(w) })));
    const { w: victim, jobs } = owned.sort((a, b) => b.jobs.length - a.jobs.length)[0]!;
    const killedAt = performance.now();
    await kill9(victim);
    const [handedOver, recoveryMs] = await Promise.all([
      // Any surviving worker may take a job over, the replacement too once it answers.
      handOver(jobs, alive, killedAt, HAND_OVER_BOUND_MS),
      replace('worker', 0).then(
        () => performance.now() - killedAt,
        (err: Error) => (say(`worker not replaced: ${err.message.split('\n')[0]}`), Infinity),
      ),
    ]);
    const kill: Kill = { role: 'worker', pid: victim.child.pid, recoveryMs, handOver: handedOver };
    say(`kill -9 of worker ${kill.pid} (running ${jobs.join(', ') || 'no leased job'}); hand-over ${[...handedOver].map(([j, ms]) => `${j} ${secs(ms)}`).join(', ')}; replacement /healthz 200 after ${secs(recoveryMs)}`);
    return kill;
  }

  /** The front, the fleet's own processes, then the replacements (SIGTERM each). */
  async function stopAll(): Promise<void> {
    await fleet!.stop();
    for (const role of ['api', 'worker'] as const) await Promise.all(members.filter((m) => m.role === role).map((m) => stopMember(m)));
  }

  /**
   * Until every restatement is served, every queued webhook message received, every raised alert
   * emailed and the scheduled bundle completed, or 120 s: what is still missing then fails below.
   */
  async function settle(services: Services, hooks: number[], accounts: Account[], runs: IngestRun[]): Promise<void> {
    const end = performance.now() + 120_000;
    const scoresDecided = webhooksDecidedOnScores(services);
    const pending = async () => {
      const [r, d, w, a, e] = await Promise.all([
        checkRestatements(services, runs),
        scoresDecided(),
        checkWebhooks(services.events, hooks, receiver!.received),
        checkAlerts(services.events, accounts, outboxDir(dir)),
        checkExports(services.events, services.exportFiles, SCHEDULE, new Date(NOW)),
      ]);
      return [
        r.wrong.length ? `${r.wrong.length} restatements not served (${r.wrong.slice(0, 2).join('; ')}; ${await lagOf(services)})` : '',
        d,
        w.missing.length ? `${w.missing.length} webhook messages not received` : '',
        a.notOnce.length ? `${a.notOnce.length} alerts not emailed` : '',
        e.completed.length ? '' : 'no scheduled bundle',
      ].filter(Boolean);
    };
    const left = () => within(30_000, 'reading the log and read models', pending()).catch((err: Error) => [err.message]);
    for (let missing = await left(); missing.length > 0; missing = await left()) {
      // What is still missing then is reported by the checks (a store that does not answer: by the step that waits on it).
      if (performance.now() > end) return say(`still waiting after 120 s: ${missing.join('; ')}`);
      await sleep(1_000);
    }
  }

  /**
   * '' once the webhook dispatcher has decided on the log's last score event, else what it lacks: a
   * restatement served a moment ago may still be decided into a message, which a fleet stopped then
   * would never send. Reads the log on from where it stopped the call before.
   */
  function webhooksDecidedOnScores(services: Services): () => Promise<string> {
    let after: string | null = null;
    let lastScore: string | null = null;
    return async () => {
      for (let page = await services.events.readAll({ after, maxCount: 1_000 }); page.length > 0; page = await services.events.readAll({ after, maxCount: 1_000 })) {
        for (const e of page) if (e.streamId.startsWith('scores-')) lastScore = e.position;
        after = page[page.length - 1]!.position;
      }
      const decided = (await DispatchCheckpoint.stored(services.reads))?.position ?? null;
      return lastScore !== null && (decided === null || decided < lastScore) ? `webhooks decided up to ${decided ?? 'nothing'}, the last score event is at ${lastScore}` : '';
    };
  }

  /** The log head and each projection's checkpoint: how far the read models are behind. */
  async function lagOf(services: Services): Promise<string> {
    const head = await services.events.headPosition();
    const at = await Promise.all(allProjections().map((p) => p.name).map(async (p) => `${p} ${(await services.reads.checkpoint(p)) ?? 'none'}`));
    return `log head ${head ?? 'none'}; ${at.join(', ')}`;
  }

  async function fleetReport(services: Services, hooks: number[], accounts: Account[]): Promise<FleetChecks> {
    return {
      webhooks: await checkWebhooks(services.events, hooks, receiver!.received),
      alerts: await checkAlerts(services.events, accounts, outboxDir(dir)),
      exports: await checkExports(services.events, services.exportFiles, SCHEDULE, new Date(NOW)),
      deadLetters: [...deadLetters],
    };
  }

  /** The soak's checks on the stopped fleet: the ledgers against the answers, the audit, a replay into a database of its own. */
  async function runChecks(services: Services, accounts: Account[], load: { loadMs: number; ingestRuns: IngestRun[]; kills: Kill[] }, finalUsage: Outcome['finalUsage']): Promise<Outcome> {
    say('scores audit --all --json');
    const audit = await within(120_000, 'scores audit --all', cli(['audit', '--all', '--json'], env));
    say('reading the ledgers and the live read models');
    await within(120_000, 'the read models catching up with the log', services.runner.start());
    const ledger = await within(60_000, 'reading the ledgers', checkLedgers(services, accounts, rec.answers, new Date(NOW)));
    const restatements = await checkRestatements(services, load.ingestRuns);
    const live = await within(60_000, 'reading the live read models', readModelDocuments(services));
    say('scores replay into a database of its own');
    const replayEnv = { ...env, ...sandbox!.readModels('replay').env, SCORES_DATA_DIR: join(dir, 'replay') };
    const replay = await within(180_000, 'scores replay', cli(['replay', '--json'], replayEnv));
    const replayed = replay.code === 0 ? await within(60_000, 'reading the replayed read models', withStore(replayEnv, readModelDocuments)) : null;
    let auditReport: Outcome['audit']['report'] = null;
    try {
      auditReport = JSON.parse(audit.stdout) as typeof auditReport;
    } catch {
      // reported by the table
    }
    const recoveries: Recovery[] = load.kills.map((k, i) => ({ kill: i + 1, pid: k.pid ?? null, ms: k.recoveryMs }));
    return {
      accounts,
      loadMs: load.loadMs,
      recoveries,
      aborted: null,
      ingestRuns: load.ingestRuns,
      audit: { code: audit.code, report: auditReport, stderr: audit.stderr },
      ledger,
      restatements,
      replay: { code: replay.code, stderr: replay.stderr, comparison: replayed ? compareReadModels(live, replayed) : null },
      finalUsage,
    };
  }
});

interface FleetChecks {
  webhooks: WebhookReport;
  alerts: AlertReport;
  exports: ExportReport;
  deadLetters: string[];
}

const list = (xs: readonly string[]) => xs.slice(0, 5).map((x) => `\n      ${x}`).join('');

/** The fleet's rows of the table (hand-overs, webhooks, alert emails, bundles) and its reasons to fail. */
function extraOf(kills: readonly Kill[], c: FleetChecks): { rows: [string, string][]; reasons: string[] } {
  const rows: [string, string][] = [];
  const reasons: string[] = [];
  kills.forEach((k, i) => {
    const jobs = [...k.handOver].map(([job, ms]) => `${job} ${secs(ms)}`).join(', ');
    rows.push([`kill ${i + 1}: ${k.role} ${k.pid}`, `replaced, /healthz 200 after ${secs(k.recoveryMs)}${k.role === 'worker' ? `; hand-over: ${jobs || 'no leased job ran there'}` : ''}`]);
    const late = [...k.handOver].filter(([, ms]) => !Number.isFinite(ms)).map(([job]) => job);
    if (late.length) reasons.push(`kill ${i + 1}: ${late.join(', ')} not running on another worker within ${HAND_OVER_BOUND_MS / 1000} s`);
  });
  const w = c.webhooks;
  rows.push(['webhook messages', `${n(w.queued)} decided; ${n(w.deliveries)} deliveries under ${n(w.ids)} ids; ${w.missing.length} missing, ${w.doubled.length} doubled, ${w.unstable.length} unstable`]);
  if (w.queued === 0) reasons.push('no webhook message was decided: the restatements moved no score the webhooks follow');
  if (w.missing.length) reasons.push(`${w.missing.length} webhook messages never reached the receiver:${list(w.missing)}`);
  if (w.doubled.length) reasons.push(`webhook decisions doubled:${list(w.doubled)}`);
  if (w.unstable.length || w.unknown.length) reasons.push(`webhook ids not stable:${list([...w.unstable, ...w.unknown.map((id) => `${id}: never queued`)])}`);
  const a = c.alerts;
  const raised = [...a.raised].sort(([x], [y]) => x - y).map(([t, k]) => `${t}%: ${k}`).join(', ') || 'none';
  rows.push(['alert emails', `raised ${raised}; ${a.files} outbox files; ${a.notOnce.length} not emailed once, ${a.raisedTwice.length} raised twice`]);
  if (a.raised.size === 0) reasons.push('no usage alert was raised: the drained accounts crossed no threshold');
  if (a.raisedTwice.length || a.notOnce.length || a.noFile.length) reasons.push(`alert emails not once each:${list([...a.raisedTwice, ...a.notOnce, ...a.noFile.map((x) => `${x}: no outbox file`)])}`);
  const e = c.exports;
  rows.push(['scheduled export bundles', `${e.completed.length} for ${e.slot} (${e.abandoned} abandoned); in shared storage: ${e.stored.join(', ') || 'none'}`]);
  if (e.completed.length !== 1) reasons.push(`${e.completed.length} scheduled bundles completed for ${e.slot}, not one: ${e.completed.join(', ')}`);
  else if (e.stored.join() !== e.completed.join()) reasons.push(`the shared export storage holds ${e.stored.join(', ') || 'nothing'}, not the one bundle ${e.completed[0]}`);
  rows.push(['ingest dead letters', `${c.deadLetters.length}${c.deadLetters.length ? `: ${[...new Set(c.deadLetters)].slice(0, 3).join('; ')}` : ''}`]);
  if (c.deadLetters.length) reasons.push(`${c.deadLetters.length} restatements dead-lettered by the ingest job (all were valid):${list(c.deadLetters)}`);
  return { rows, reasons };
}
