import { startDemoPublisher } from '../../commands/seed-demo/demo-publisher.reactor.js';
import type { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { startIngestConsumer } from '../../commands/ingest/ingest.reactor.js';
import { startAlertDispatcher } from '../../commands/send-usage-alerts/usage-alerts.reactor.js';
import { startInvoiceIssuer, type InvoiceIssuer } from '../../commands/billing/invoice.reactor.js';
import { startWebhookDispatcher } from '../../commands/deliver-webhooks/webhook-dispatch.reactor.js';
import { parseSchedule, startExportSchedule } from '../../commands/export-bundles/export-schedule.reactor.js';
import { fencedEventStore } from '../core/fenced-event-store.js';
import { fencedMailer, fencedWebhookSender } from '../core/fenced-effects.js';
import { JobLease, processOwnerId } from '../core/lease.js';
import { runWhileOwned, type LeaseRun } from '../core/lease-runner.js';
import { fencedReadStore } from '../core/fenced-read-store.js';
import { ReadModelUnit, type ReadModelDef } from '../core/read-model-unit.js';
import { readModelUnits } from '../../projections/index.js';
import { warnIfLocalDataKey, warnIfUnsigned, type Services } from './container.js';

/**
 * The background workers (jobs), by the name the guides (README, docs/architecture.md), the logs
 * and `scores worker --jobs` use. `startJobs` starts the ones named in this order (`projections`,
 * the projector runner, first: the others start on caught-up read models) and stops them in
 * STOP_ORDER's.
 */
export const WORKER_NAMES = ['projections', 'publisher', 'alerts', 'webhooks', 'ingest', 'invoices', 'exports'] as const;
export type WorkerName = (typeof WORKER_NAMES)[number];

interface Stoppable {
  stop(): Promise<void>;
}

/** The export schedule and the publisher first (they start work), the bus consumers, then the projections. */
const STOP_ORDER: readonly WorkerName[] = ['exports', 'publisher', 'alerts', 'invoices', 'webhooks', 'ingest', 'projections'];

/**
 * `off`: the job's configuration turns it off here (no demo dataset, no export schedule);
 * `standby`: another process owns the job's lease, this one takes it over when that one stops;
 * `starting`: its lease is being asked for, or was taken here and the job is starting.
 */
export type JobState = 'starting' | 'running' | 'standby' | 'off';

/** The jobs a process runs, started and stopped together. */
export interface RunningJobs {
  /** Each job asked for, in start order, with its state (`off`: its configuration turns it off). */
  states(): { name: WorkerName; state: JobState }[];
  /** Under `projections` in a worker: each read model's unit and its state here (empty elsewhere). */
  readModels(): { name: string; state: Exclude<JobState, 'off'> }[];
  /** The invoice issuer, when the `invoices` job runs here (`drain()` runs a pass now). */
  invoices: InvoiceIssuer | null;
  /** Stops every job started, in STOP_ORDER. */
  stop(): Promise<void>;
}

/** What starting a job needs besides the services: the demo's one simulation for the publisher. */
export interface JobContext {
  dataset: DemoDataset | null;
  /** `scores worker`: run the jobs under leases (below); all-in-one runs them itself. */
  leases?: boolean;
}

/**
 * A worker (`scores worker`, shared engines only) runs its jobs under a lease (src/core/lease.ts):
 * one owner per job across the fleet, its writes fenced; `projections` is one lease per read model
 * (`lease-projection-<read model>`, its commits fenced by it). An all-in-one process runs every job
 * itself, so its log carries no lease renewals.
 */
const LEASE_TTL_MS = 15_000;
/**
 * A worker's first claims of the read models' leases are paced, one every 300 ms in an order of
 * its own: workers started together (`scores fleet up`, a deploy) then split the read models
 * between them instead of the first one up taking them all at once while the others idle (the
 * fleet's first start projected the whole demo on one worker). A worker alone holds every read
 * model about 3 s after its start.
 */
const CLAIM_SPACING_MS = 300;
const leased = (ctx: JobContext) => ctx.leases === true;

/** Whether the job's configuration turns it off here, so that no process should run it. */
const isOff = (services: Services, name: WorkerName, ctx: JobContext) =>
  (name === 'publisher' && !ctx.dataset) || (name === 'exports' && !services.config.exportsSchedule);

interface Started {
  name: WorkerName;
  job: Stoppable | null;
  lease?: LeaseRun;
  /** A job made of leased parts (`projections`: one per read model). */
  parts?: { name: string; run: LeaseRun }[];
}

/**
 * What a leased job sees: every write fenced by its lease, and every webhook or email sent only while
 * the lease holds longer than the send may take (src/core/fenced-effects.ts).
 */
function fencedServices(services: Services, held: JobLease): Services {
  return {
    ...services,
    events: fencedEventStore(services.events, held),
    webhookSender: fencedWebhookSender(services.webhookSender, held),
    mailer: fencedMailer(services.mailer, held),
  };
}

/** Starts the job whenever this process owns its lease; every write and effect of the job is fenced by it. */
function startLeased(services: Services, name: WorkerName, ctx: JobContext, owner: string): Started {
  const lease = new JobLease(services.events, services.transportClock, { job: name, owner, ttlMs: LEASE_TTL_MS });
  const run = runWhileOwned(
    lease,
    async (held) => STARTERS[name](fencedServices(services, held), ctx),
    {
      onError: (err) => services.log.warn({ err, job: name }, 'job lease: not started or not renewed; retried'),
      onOwnerChange: (owned) => services.log.info({ job: name, owner }, owned ? 'job lease taken: running the job here' : 'job lease lost: job stopped here'),
    },
  );
  return { name, job: { stop: () => run.stop() }, lease: run };
}

/**
 * `projections` in a worker: each read model its own leased unit, so workers split the read models
 * and take over a stopped or dead worker's; a unit projects its read model's live generation and
 * takes a replay's hand-over (docs/scaling.md, "Projections per read model"). The job is
 * `starting` while a unit is, else `running` while any unit runs here, else `standby`.
 */
function startReadModelUnits(services: Services, owner: string): Started {
  const units = readModelUnits();
  const order = shuffled(units.map((_, i) => i));
  const runs = units.map((def, i) => ({ name: def.name, run: startReadModelUnit(services, def, owner, order.indexOf(i) * CLAIM_SPACING_MS) }));
  const run: LeaseRun = {
    get owned() {
      return runs.some((r) => r.run.owned);
    },
    get state() {
      const states = runs.map((r) => r.run.state);
      return states.includes('starting') ? 'starting' : states.includes('running') ? 'running' : 'standby';
    },
    stop: async () => {
      await Promise.all(runs.map((r) => r.run.stop()));
    },
  };
  return { name: 'projections', job: { stop: () => run.stop() }, lease: run, parts: runs };
}

/**
 * One read model's leased unit. Its start returns once the unit is following the log, not once
 * it caught up: the lease is renewed meanwhile, so a catch-up longer than the ttl keeps it.
 */
function startReadModelUnit(services: Services, def: ReadModelDef, owner: string, firstTryMs: number): LeaseRun {
  const job = `projection-${def.name}`;
  const lease = new JobLease(services.events, services.transportClock, { job, owner, ttlMs: LEASE_TTL_MS });
  const { base, generations } = services.readModels;
  const onError = (err: unknown) => services.log.error({ err, job }, 'read model projector failed; it follows the log again from its last checkpoint after a pause');
  return runWhileOwned(
    lease,
    async (held) => {
      const unit = new ReadModelUnit(services.events, base, generations, def, {
        owner,
        fence: (store) => fencedReadStore(store, held),
        onError,
        onGeneration: (generation) => services.log.info({ job, generation }, 'projecting read model generation'),
      });
      unit.start().catch(onError);
      return unit;
    },
    {
      firstTryMs,
      onError: (err) => services.log.warn({ err, job }, 'job lease: not started or not renewed; retried'),
      onOwnerChange: (owned) => services.log.info({ job, owner }, owned ? 'job lease taken: running the job here' : 'job lease lost: job stopped here'),
    },
  );
}

/** `items` in a random order (Fisher-Yates). */
function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** How each job starts (`isOff` has ruled out a job its configuration turns off). */
const STARTERS: Record<WorkerName, (services: Services, ctx: JobContext) => Promise<Stoppable> | Stoppable> = {
  projections: runProjections,
  publisher: (services, { dataset }) => runDemoPublisher(services, dataset!),
  alerts: runUsageAlerts,
  webhooks: runWebhookDelivery,
  ingest: runIngestConsumer,
  invoices: runInvoiceIssuer,
  exports: (services) => runExportSchedule(services, services.config.exportsSchedule!),
};

/** The names in `text` (comma separated), or an error naming the valid ones. */
export function parseJobNames(text: string): WorkerName[] {
  const names = text.split(',').map((n) => n.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(WORKER_NAMES as readonly string[]).includes(n));
  if (unknown.length || names.length === 0) {
    throw new Error(`unknown job${unknown.length === 1 ? '' : 's'} ${unknown.join(', ') || '(none named)'}; the jobs are: ${WORKER_NAMES.join(', ')}`);
  }
  return WORKER_NAMES.filter((n) => names.includes(n));
}

/**
 * Starts the jobs named, one by one in WORKER_NAMES' order; a job that fails to start stops those
 * started before it and the error is thrown. A wrapper (a lease, say) may start one by its name.
 */
export async function startJobs(services: Services, names: readonly WorkerName[], ctx: JobContext): Promise<RunningJobs> {
  const started: Started[] = [];
  const owner = processOwnerId();
  const stopAll = async () => {
    for (const name of STOP_ORDER) await started.find((s) => s.name === name)?.job?.stop();
  };
  for (const name of WORKER_NAMES.filter((n) => names.includes(n))) {
    try {
      if (isOff(services, name, ctx)) started.push({ name, job: null });
      else if (leased(ctx) && name === 'projections') started.push(startReadModelUnits(services, owner));
      else if (leased(ctx)) started.push(startLeased(services, name, ctx, owner));
      else started.push({ name, job: await STARTERS[name](services, ctx) });
    } catch (err) {
      await stopAll();
      throw err;
    }
  }
  const invoices = started.find((s) => s.name === 'invoices');
  return {
    states: () => started.map(({ name, job, lease }) => ({ name, state: !job ? 'off' : (lease?.state ?? 'running') })),
    readModels: () => started.find((s) => s.parts)?.parts?.map((p) => ({ name: p.name, state: p.run.state })) ?? [],
    // `drain()` is for the all-in-one process; under a lease the issuer runs wherever the lease is.
    invoices: invoices && !invoices.lease ? (invoices.job as InvoiceIssuer | null) : null,
    stop: stopAll,
  };
}

/** The projector runner as a job: resolves once the read models have caught up with the log. */
async function runProjections(services: Services): Promise<Stoppable> {
  await services.runner.start();
  return { stop: () => services.runner.stop() };
}

function runDemoPublisher(services: Services, dataset: DemoDataset) {
  return startDemoPublisher({
    store: services.events,
    clock: services.clock,
    dataset,
    onError: (err) => services.log.error({ err }, 'demo publisher failed'),
  });
}

function runUsageAlerts(services: Services) {
  return startAlertDispatcher({
    reads: services.reads,
    events: services.events,
    mailer: services.mailer,
    personal: services.personal,
    clock: services.clock,
    onError: (err, alertId) => services.log.warn({ err, alertId }, 'usage alert email not sent'),
  });
}

function runWebhookDelivery(services: Services) {
  warnIfLocalDataKey(services);
  return startWebhookDispatcher({
    events: services.events,
    reads: services.reads,
    // The read models' progress: this process's runner, or the projections another process commits.
    runner: services.feed,
    clock: services.clock,
    transportClock: services.transportClock,
    sender: services.webhookSender,
    personal: services.personal,
    // Sending is a consumer group on it: with Kafka the replicas share the webhooks.
    bus: services.bus,
    onError: (err, at) => services.log.warn({ err, ...at }, 'webhook dispatch failed'),
  });
}

function runIngestConsumer(services: Services) {
  return startIngestConsumer({
    bus: services.bus,
    store: services.events,
    clock: services.clock,
    log: (msg) => services.log.warn(msg),
  });
}

function runInvoiceIssuer(services: Services): InvoiceIssuer {
  warnIfUnsigned(services, 'invoices');
  return startInvoiceIssuer({
    ledger: services.ledger,
    events: services.events,
    reads: services.reads,
    billing: services.billing,
    clock: services.clock,
    signer: services.keyring.signer,
    onError: (err, month) => services.log.warn({ err, account_id: month?.account_id, period: month?.period }, 'invoice not issued; retried on the next pass'),
  });
}

function runExportSchedule(services: Services, schedule: string) {
  return startExportSchedule({
    events: services.events,
    reads: services.reads,
    files: services.exportFiles,
    clock: services.clock,
    ids: services.ids,
    schedule: parseSchedule(schedule),
    onRun: (r) => (r.status === 'completed' ? services.log.info({ run_id: r.run_id, seconds: r.seconds }, 'export bundle written') : undefined),
    onError: (err) => services.log.error({ err }, 'export run failed; the next try is in 15 minutes'),
  });
}
