/**
 * What only a fleet can get wrong, checked on its log once it is stopped: each webhook decision,
 * alert email and scheduled export bundle made once across the workers, whichever of them owned
 * the job when. test/e2e/scaled-deployment.test.ts; the soak's own checks are test/soak/checks.ts.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { EventStore, RecordedEvent } from '../../src/core/event-store.port.js';
import type { ExportFiles } from '../../src/core/export-files.port.js';
import { latestSlot, parseSchedule } from '../../commands/export-bundles/export-schedule.reactor.js';
import { canonicalJson, ledgerStream, type UsageAlertRaised } from '../../src/domain/ledger/ledger.events.js';
import { mailStream, type UsageAlertEmailed } from '../../src/domain/mail/mail.events.js';
import { EXPORTS_STREAM, type ExportStarted } from '../../src/domain/exports/export.events.js';
import { webhookStream, type WebhookMessageQueued } from '../../src/domain/webhooks/webhook.events.js';
import type { ReceivedDelivery } from './receiver-certificate.js';

export interface WebhookReport {
  /** Messages queued (decided) in the log, over the webhooks checked. */
  queued: number;
  /** Deliveries the receiver took (repeats included), and how many message ids they carried. */
  deliveries: number;
  ids: number;
  /** Queued messages the receiver never got. */
  missing: string[];
  /** One message id received with different bodies, or with a body other than the queued envelope (compared as canonical JSON). */
  unstable: string[];
  /** A webhook-id the log never queued. */
  unknown: string[];
  /** A message id queued twice, or one event (type, ticker, date) in two messages of one webhook. */
  doubled: string[];
}

/** The body as canonical JSON (keys sorted): the same message whatever the key order the log kept it in. */
function canonicalBody(body: string): string {
  try {
    return canonicalJson(JSON.parse(body));
  } catch {
    return body;
  }
}

const queuedOf = (events: readonly RecordedEvent[]) => events.filter((e) => e.type === 'WebhookMessageQueued').map((e) => (e as unknown as WebhookMessageQueued).data);

/** Each queued message reached `received` at least once under its id, with the queued bytes; no decision twice. */
export async function checkWebhooks(events: EventStore, hookIds: readonly number[], received: readonly ReceivedDelivery[]): Promise<WebhookReport> {
  const bodies = new Map<string, string>();
  const doubled: string[] = [];
  for (const id of hookIds) {
    const eventsSeen = new Set<string>();
    for (const m of queuedOf(await events.readStream(webhookStream(id)))) {
      if (bodies.has(m.message_id)) doubled.push(`webhook ${id}: message ${m.message_id} queued twice`);
      bodies.set(m.message_id, canonicalJson(m.envelope));
      for (const e of m.envelope.events) {
        const key = `${e.type} ${e.ticker} ${e.date}`;
        if (eventsSeen.has(key)) doubled.push(`webhook ${id}: ${key} in two messages`);
        eventsSeen.add(key);
      }
    }
  }
  const got = new Map<string, Set<string>>();
  for (const d of received) {
    const id = String(d.headers['webhook-id']);
    got.set(id, (got.get(id) ?? new Set()).add(canonicalBody(d.body)));
  }
  const unstable = [...got].filter(([id, b]) => bodies.has(id) && (b.size > 1 || !b.has(bodies.get(id)!))).map(([id, b]) => `${id}: ${b.size} bodies`);
  return {
    queued: bodies.size,
    deliveries: received.length,
    ids: got.size,
    missing: [...bodies.keys()].filter((id) => !got.has(id)),
    unstable,
    unknown: [...got.keys()].filter((id) => !bodies.has(id)),
    doubled,
  };
}

export interface AlertReport {
  /** Alerts raised, by threshold (`75`, `90`, `100`). */
  raised: Map<number, number>;
  /** An (account, month, threshold) raised twice. */
  raisedTwice: string[];
  /** An alert whose `UsageAlertEmailed` count is not 1 (0: never sent; 2: sent twice). */
  notOnce: string[];
  /** An alert without its outbox file `<alert id>.eml`. */
  noFile: string[];
  files: number;
}

/** Each threshold an account crossed raised one alert, emailed once (one `UsageAlertEmailed`, one outbox file). */
export async function checkAlerts(events: EventStore, accounts: readonly { label: string; account_id: string }[], outbox: string): Promise<AlertReport> {
  const report: AlertReport = { raised: new Map(), raisedTwice: [], notOnce: [], noFile: [], files: 0 };
  const files = new Set(existsSync(outbox) ? readdirSync(outbox).filter((f) => f.endsWith('.eml')) : []);
  for (const a of accounts) {
    const emailed = new Map<string, number>();
    for (const e of await events.readStream(mailStream(a.account_id))) {
      if (e.type === 'UsageAlertEmailed') {
        const id = (e.data as UsageAlertEmailed['data']).alert_event_id;
        emailed.set(id, (emailed.get(id) ?? 0) + 1);
      }
    }
    const seen = new Set<string>();
    for (const e of await events.readStream(ledgerStream(a.account_id))) {
      if (e.type !== 'UsageAlertRaised') continue;
      const { period, threshold } = (e as unknown as UsageAlertRaised).data;
      report.raised.set(threshold, (report.raised.get(threshold) ?? 0) + 1);
      if (seen.has(`${period} ${threshold}`)) report.raisedTwice.push(`${a.label} ${period} ${threshold}%`);
      seen.add(`${period} ${threshold}`);
      if (emailed.get(e.id) !== 1) report.notOnce.push(`${a.label} ${threshold}% (${e.id}): emailed ${emailed.get(e.id) ?? 0} times`);
      if (files.has(`${e.id}.eml`)) report.files++;
      else report.noFile.push(`${a.label} ${threshold}% (${e.id})`);
    }
  }
  return report;
}

export interface ExportReport {
  /** The latest scheduled time at the data clock's `now`. */
  slot: string | null;
  /** Scheduled runs completed for that time (must be one), and those started and abandoned. */
  completed: string[];
  abandoned: number;
  /** The runs with files in the shared export storage. */
  stored: string[];
}

/** The scheduled bundles of the `exports` stream for the latest scheduled time, and what the shared storage holds. */
export async function checkExports(events: EventStore, files: ExportFiles, schedule: string, now: Date): Promise<ExportReport> {
  const slot = latestSlot(parseSchedule(schedule), now)?.toISOString() ?? null;
  const started = new Map<string, ExportStarted['data']>();
  const completed: string[] = [];
  let abandoned = 0;
  for (const e of await events.readStream(EXPORTS_STREAM)) {
    const data = e.data as { run_id: string };
    if (e.type === 'ExportStarted') started.set(data.run_id, e.data as ExportStarted['data']);
    if (e.type === 'ExportAbandoned') abandoned++;
    const run = started.get(data.run_id);
    if (e.type === 'ExportCompleted' && run?.trigger === 'schedule' && slot !== null && run.started_at >= slot) completed.push(data.run_id);
  }
  return { slot, completed, abandoned, stored: (await files.runs()).sort() };
}

export const outboxDir = (dataDir: string): string => join(dataDir, 'outbox');
