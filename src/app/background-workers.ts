import { startDemoPublisher } from '../../commands/seed-demo/demo-publisher.reactor.js';
import type { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { startIngestConsumer } from '../../commands/ingest/ingest.reactor.js';
import { startAlertDispatcher } from '../../commands/send-usage-alerts/usage-alerts.reactor.js';
import { startInvoiceIssuer, type InvoiceIssuer } from '../../commands/billing/invoice.reactor.js';
import { startWebhookDispatcher } from '../../commands/deliver-webhooks/webhook-dispatch.reactor.js';
import { parseSchedule, startExportSchedule } from '../../commands/export-bundles/export-schedule.reactor.js';
import type { Services } from './container.js';

/**
 * The background workers, by the name the guides (README, docs/architecture.md) and the logs use.
 * `projections` is the projector runner, started by catchUpReadModels in server.ts before the
 * others; the rest start here in this order and stop in the reverse of `STOP_ORDER`.
 */
export const WORKER_NAMES = ['projections', 'publisher', 'alerts', 'webhooks', 'ingest', 'invoices', 'exports'] as const;
export type WorkerName = (typeof WORKER_NAMES)[number];

interface Stoppable {
  stop(): Promise<void>;
}

/** The workers a serving process runs beside the projector runner, started and stopped together. */
export interface BackgroundWorkers {
  /** Issues the invoices of closed months (every 5 s; `drain()` runs a pass now). */
  invoices: InvoiceIssuer;
  /** Stops every worker (the export schedule and the publisher first, the bus consumers last). */
  stop(): Promise<void>;
}

const STOP_ORDER: readonly Exclude<WorkerName, 'projections'>[] = ['exports', 'publisher', 'alerts', 'invoices', 'webhooks', 'ingest'];

/** Starts the background workers; `dataset` (the demo's one simulation) drives the demo publisher. */
export async function startBackgroundWorkers(services: Services, dataset: DemoDataset | null): Promise<BackgroundWorkers> {
  const schedule = services.config.exportsSchedule;
  // Started in the literal's order.
  const running: Record<Exclude<WorkerName, 'projections'>, Stoppable | null> & { invoices: InvoiceIssuer } = {
    publisher: dataset ? runDemoPublisher(services, dataset) : null,
    alerts: runUsageAlerts(services),
    webhooks: await runWebhookDelivery(services),
    ingest: await runIngestConsumer(services),
    invoices: runInvoiceIssuer(services),
    exports: schedule ? runExportSchedule(services, schedule) : null,
  };
  return {
    invoices: running.invoices,
    async stop() {
      for (const name of STOP_ORDER) await running[name]?.stop();
    },
  };
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
    clock: services.clock,
    onError: (err, alertId) => services.log.warn({ err, alertId }, 'usage alert email not sent'),
  });
}

function runWebhookDelivery(services: Services) {
  return startWebhookDispatcher({
    events: services.events,
    reads: services.reads,
    runner: services.runner,
    clock: services.clock,
    transportClock: services.transportClock,
    sender: services.webhookSender,
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
  return startInvoiceIssuer({
    ledger: services.ledger,
    events: services.events,
    reads: services.reads,
    billing: services.billing,
    clock: services.clock,
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
