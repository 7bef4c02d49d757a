import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { advanceDemo } from '../../commands/seed-demo/seed-demo.handler.js';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { pgSession, type PgSession } from '../../infra/postgresql/database.js';
import { PostgresEventStore } from '../../infra/postgresql/event-store.js';
import { dailyScoresProjection } from '../../projections/daily-scores/daily-scores.projection.js';
import { divergenceProjection } from '../../projections/divergence/divergence.projection.js';
import { referenceProjection } from '../../projections/reference/reference.projection.js';
import { scoreHistoryHead, scoreHistoryProjection } from '../../projections/score-history/score-history.projection.js';
import { usageDays, usageDaysProjection } from '../../projections/usage-days/usage-days.projection.js';
import { ledgerStates, usageProjection } from '../../projections/usage/usage.projection.js';
import { webhooks, webhooksProjection } from '../../projections/webhooks/webhooks.projection.js';
import { fixedClock } from '../../src/core/clock.js';
import type { EventStore, SubscribeOptions } from '../../src/core/event-store.port.js';
import { logEncoding } from '../../src/domain/scores/log-encoding.js';
import { projectRoot } from '../../src/core/paths.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { canonicalJson, ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { WEBHOOK_REGISTRY_STREAM, webhookStream } from '../../src/domain/webhooks/webhook.events.js';
import { compareReadModels } from '../soak/checks.js';
import { openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { runLedger } from '../support/ledger-script.js';
import { until } from '../support/processes.js';
import { attempt, decideAfter, delivered, failed, queue, register, type AnyWebhookEvent, type WebhookCommand } from '../support/webhook-commands.js';

const NOW = '2019-02-15T12:00:00Z';
/** The stored checkpoint the killed projectors start from: the log up to this day is projected first. */
const STORED_THROUGH = '2019-02-01';
/** The days after it, each with the demo's publications, calls of each account and a webhook's messages. */
const DAYS = Array.from({ length: 14 }, (_, i) => `2019-02-${String(i + 2).padStart(2, '0')}`);
const ACCOUNTS = ['acc-kill-a', 'acc-kill-b'];
/** Events per commit: about one day of the log, so a commit writes ledger, webhook and market data documents together. */
const BATCH = 12;
/** The commits each killed projector makes before its next one is frozen: each kill cuts a later batch. */
const COMMITS_BEFORE_KILL = [0, 2, 3];

/**
 * The market data, score history, usage, usage days and webhooks projections, in allProjections'
 * order. Their re-delivery guards (a document that tells an event applied already): usage-v5's
 * `ledger_states.seq` (the ledger revision each account's fold applied last), usage-days-v2's
 * per-day ledger `revision`, webhooks-v2's per-webhook stream `revision` and score-history-v4's
 * head `position`. None is involved here: the PostgreSQL commit is one transaction, so a kill
 * leaves no write ahead of the checkpoints for them to catch (`guardsAhead` checks it after each
 * kill). They stay for the MongoDB-wire store without transactions (projection-cut-commit.test.ts)
 * and for the one commit a paused lease owner can land (docs/architecture.md, "Exactly-once
 * projection on PostgreSQL").
 */
const PROJECTIONS = [referenceProjection, scoreHistoryProjection, dailyScoresProjection, usageProjection, divergenceProjection, webhooksProjection, usageDaysProjection];

const debit = (id: string): LedgerCommand => ({ type: 'DebitCredits', data: { request_id: id, endpoint: 'divergence', channel: 'rest', cost: 1 } });

/** Webhook commands decided by the real deciders, each event appended to its stream. */
class WebhookLog {
  private readonly decided: AnyWebhookEvent[] = [];
  constructor(private readonly events: EventStore) {}

  async run(command: WebhookCommand, at: string): Promise<void> {
    for (const e of decideAfter(this.decided, command, new Date(at))) {
      this.decided.push(e);
      const stream = e.type === 'WebhookIdAssigned' || e.type === 'WebhookIdReleased' ? WEBHOOK_REGISTRY_STREAM : webhookStream(e.data.webhook_id);
      await this.events.append(stream, [{ type: e.type, data: e.data }]);
    }
  }
}

/** The log as a projector stopped at `position` saw it: nothing after it. */
function logUpTo(events: EventStore, position: string): EventStore {
  return new Proxy(events, {
    get(target, prop, receiver) {
      if (prop === 'headPosition') return async () => position;
      if (prop !== 'subscribeToAll') return Reflect.get(target, prop, receiver) as unknown;
      return (options: SubscribeOptions) =>
        target.subscribeToAll({
          ...options,
          onEvents: async (batch) => {
            const upTo = batch.filter((e) => e.position <= position);
            if (upTo.length) await options.onEvents(upTo);
          },
        });
    },
  });
}

/** Projects the log (up to `upTo`, else all of it) into `store` from its checkpoints. */
async function project(events: EventStore, store: ReadStore, upTo?: string): Promise<void> {
  const runner = new ProjectorRunner(upTo ? logUpTo(events, upTo) : events, store, PROJECTIONS, { batchSize: BATCH });
  await runner.start();
  await runner.waitForHead();
  await runner.stop();
}

/** Every collection's documents, as canonical JSON in id order. */
async function documents(store: ReadStore): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const def of PROJECTIONS.flatMap((p) => p.collections)) {
    const docs: string[] = [];
    for await (const doc of store.scan(def)) docs.push(canonicalJson(doc));
    out.set(def.name, docs);
  }
  return out;
}

/**
 * The documents whose re-delivery guard would skip an event after `position` when projecting
 * resumes: a ledger state, a usage day or a webhook holding the revision of an event its stream
 * has after the checkpoint, or the score history's head a later position. None: no guard fires.
 */
async function guardsAhead(store: ReadStore, events: EventStore, position: string): Promise<string[]> {
  const covered = new Map<string, number>();
  const coveredOf = async (stream: string) => {
    if (!covered.has(stream)) covered.set(stream, (await events.readStream(stream)).filter((e) => e.position <= position).at(-1)?.revision ?? -1);
    return covered.get(stream)!;
  };
  const ahead: string[] = [];
  for await (const s of store.scan(ledgerStates)) if (s.seq > (await coveredOf(ledgerStream(s.account_id)))) ahead.push(`ledger_states ${s.account_id}: ${s.seq}`);
  for await (const d of store.scan(usageDays)) if (d.revision > (await coveredOf(ledgerStream(d.account_id)))) ahead.push(`usage_days ${d.account_id} ${d.day}: ${d.revision}`);
  for await (const w of store.scan(webhooks)) if (w.revision > (await coveredOf(webhookStream(w.id)))) ahead.push(`webhooks ${w.id}: ${w.revision}`);
  const head = await store.get(scoreHistoryHead, 'head');
  if (head && head.position > position) ahead.push(`score_history_head: ${head.position}`);
  return ahead;
}

interface ProjectorProcess {
  child: ChildProcess;
  commits(): number;
  output(): string;
  exited: Promise<NodeJS.Signals | number | null>;
}

/** test/support/projector-process.ts on the sandbox's log and read models. */
function spawnProjector(env: Record<string, string>): ProjectorProcess {
  const names = PROJECTIONS.map((p) => p.name);
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/projector-process.ts', String(BATCH), ...names], {
    cwd: projectRoot(),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
  return { child, commits: () => out.split('\n').filter((l) => l.startsWith('committed ')).length, output: () => out, exited };
}

/** What the frozen commit had done when its process was killed. */
interface Kill {
  /** The checkpoint stored when it froze: the position of the last commit before it. */
  position: string;
  /** The read-model tables its transaction had written (row locks held). */
  written: string[];
}

describe('A projector killed between its writes and its checkpoint, on PostgreSQL (engines)', function () {
  this.timeout(300_000);
  const unset = unsetEngines(['POSTGRES_URL']);
  if (unset.length > 0) {
    it(`runs on the engines when POSTGRES_URL is set (unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;
  let events: PostgresEventStore;
  let live: ReadStore;
  let watcher: PgSession;

  before(async () => {
    sandbox = await openEnginesSandbox('projkill', NOW);
    events = new PostgresEventStore(sandbox.vars['POSTGRES_URL']!, fixedClock(NOW), { codec: logEncoding });
    live = sandbox.readModels().open();
    watcher = await pgSession(sandbox.vars['POSTGRES_URL']!);
    await writeLog();
  });

  after(async () => {
    await watcher?.end();
    await live?.close();
    await events?.close();
    await sandbox?.drop();
  });

  /** The demo and some accounts' and a webhook's activity through STORED_THROUGH, projected; then the days after it, not projected. */
  async function writeLog(): Promise<void> {
    const dataset = new DemoDataset({ seed: 20190102 });
    const demoThrough = (day: string) => advanceDemo({ store: events, clock: fixedClock(`${day}T12:00:00Z`), dataset });
    const hooks = new WebhookLog(events);
    await demoThrough(STORED_THROUGH);
    for (const [i, account] of ACCOUNTS.entries()) {
      await runLedger(events, account, [[{ type: 'OpenLedger', data: { account_id: account, tier: i ? 'builder' : 'hobbyist', pro: false } }, '2019-01-20T08:00:00Z']]);
    }
    await hooks.run(register(ACCOUNTS[0]!), '2019-01-21T09:00:00Z');
    await project(events, live);
    for (const [n, day] of DAYS.entries()) {
      await demoThrough(day);
      for (const account of ACCOUNTS) await runLedger(events, account, [[debit(`${day}-1`), `${day}T10:00:00Z`], [debit(`${day}-2`), `${day}T10:30:00Z`]]);
      await webhookDay(hooks, day, n);
    }
  }

  /** A message a day to webhook 1, failed, delivered every other day; a second webhook registered, used and deleted. */
  async function webhookDay(hooks: WebhookLog, day: string, n: number): Promise<void> {
    const id = n === 3 ? 2 : 1;
    if (n === 2) await hooks.run(register(ACCOUNTS[1]!), `${day}T11:00:00Z`);
    await hooks.run(queue(id, `msg-${day}`), `${day}T12:00:00Z`);
    await hooks.run(attempt(id, `msg-${day}`, failed), `${day}T12:00:01Z`);
    if (n % 2 === 0) await hooks.run(attempt(id, `msg-${day}`, delivered), `${day}T12:05:00Z`);
    if (n === 5) await hooks.run({ type: 'DeleteWebhook', account_id: ACCOUNTS[1]!, webhook_id: 2 }, `${day}T13:00:00Z`);
  }

  const checkpoints = async () => new Set(await Promise.all(PROJECTIONS.map((p) => live.checkpoint(p.name))));

  /**
   * Starts a projector process; once it has made `commitsFirst` commits, locks the checkpoints
   * table (its next commit's SELECT of the checkpoints and its read-model writes go through, its
   * checkpoint INSERT waits), kills it with SIGKILL while it waits there, then releases the lock.
   */
  async function killMidCommit(commitsFirst: number): Promise<Kill> {
    const projector = spawnProjector({ ...sandbox.vars, ...sandbox.readModels().env });
    const holder = await pgSession(sandbox.vars['POSTGRES_URL']!);
    try {
      await until(() => projector.commits() >= commitsFirst || projector.child.exitCode !== null, 120_000);
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE read_models.projector_checkpoints IN EXCLUSIVE MODE');
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
      const frozen = await blockedBehind(holderPid, projector);
      const written = await tablesWrittenBy(frozen);
      const stored = await holder.query<{ position: string }>('SELECT DISTINCT position FROM read_models.projector_checkpoints');
      expect(stored, 'one checkpoint for every projection').to.have.length(1);
      projector.child.kill('SIGKILL');
      expect(await projector.exited).to.equal('SIGKILL');
      await holder.query('ROLLBACK');
      // Its backend ends when it reads the connection's end: the transaction is rolled back then.
      await until(async () => (await watcher.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [frozen])).length === 0, 60_000, 50);
      return { position: stored[0]!.position, written };
    } finally {
      if (projector.child.exitCode === null && projector.child.signalCode === null) projector.child.kill('SIGKILL');
      await holder.end();
    }
  }

  /** The backend of the projector's commit once it waits for the checkpoints table behind `holderPid` (bounded). */
  async function blockedBehind(holderPid: number, projector: ProjectorProcess): Promise<number> {
    let pid: number | undefined;
    await until(async () => {
      if (projector.child.exitCode !== null) throw new Error(`the projector exited before its commit waited:\n${projector.output()}`);
      const rows = await watcher.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
           AND $1 = ANY(pg_blocking_pids(pid)) AND query LIKE 'INSERT INTO %projector_checkpoints%'`,
        [holderPid],
      );
      pid = rows[0]?.pid;
      return pid !== undefined;
    }, 60_000, 20);
    return pid!;
  }

  /** The read-model tables a backend's open transaction has written to. */
  async function tablesWrittenBy(pid: number): Promise<string[]> {
    const rows = await watcher.query<{ relname: string }>(
      `SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
        WHERE l.pid = $1 AND l.granted AND l.mode = 'RowExclusiveLock' AND c.relkind = 'r'
          AND c.relnamespace = 'read_models'::regnamespace AND c.relname LIKE 'rm\\_%' ORDER BY 1`,
      [pid],
    );
    return rows.map((r) => r.relname);
  }

  /** The documents of a fresh replay (into a schema of its own) of the log, or of the log up to `upTo`. */
  async function replayed(suffix: string, upTo?: string): Promise<Map<string, string[]>> {
    const store = sandbox.readModels(suffix).open();
    try {
      await project(events, store, upTo);
      return await documents(store);
    } finally {
      await store.close();
    }
  }

  it('leaves none of the killed commit visible, whichever batch it cut, and resumes to the read models of a fresh replay (no re-delivery guard involved)', async () => {
    const head = (await events.headPosition())!;
    const kills: Kill[] = [];
    for (const [k, commitsFirst] of COMMITS_BEFORE_KILL.entries()) {
      const kill = await killMidCommit(commitsFirst);
      expect(kill.written, `kill ${k}: the frozen commit had written read models`).to.not.be.empty;
      expect(kill.position < head, `kill ${k}: a batch of the log was cut`).to.equal(true);
      if (k > 0) expect(kill.position > kills[k - 1]!.position, `kill ${k}: a later batch than the last kill`).to.equal(true);
      kills.push(kill);
      expect([...(await checkpoints())], `kill ${k}: every checkpoint where the commit before stored it`).to.deep.equal([kill.position]);
      // The check that tells one transaction from two: after resuming, the guards would mend writes left ahead of the checkpoint.
      const comparison = compareReadModels(await documents(live), await replayed(`upto${k}`, kill.position));
      expect(comparison.differing, `kill ${k}: the read models are a projector's stopped at ${kill.position}`).to.deep.equal([]);
      expect(await guardsAhead(live, events, kill.position), `kill ${k}: documents a guard would skip an event for`).to.deep.equal([]);
    }
    // The kills cut commits of every read model that has a guard, and of the score history.
    const written = new Set(kills.flatMap((k) => k.written));
    for (const table of ['rm_ledger_states', 'rm_usage_days', 'rm_webhooks', 'rm_score_history']) expect(written, table).to.include(table);

    await project(events, live);
    expect([...(await checkpoints())], 'resumed to the head').to.deep.equal([head]);
    const comparison = compareReadModels(await documents(live), await replayed('replay'));
    expect(comparison.differing, 'the resumed read models equal a fresh replay').to.deep.equal([]);
    expect(comparison.documents).to.be.greaterThan(100);
  });
});
