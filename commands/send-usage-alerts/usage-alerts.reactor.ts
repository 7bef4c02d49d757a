/**
 * Sends the usage-alert emails the `mail_outbox` read model holds as pending, and records each
 * send as `UsageAlertEmailed` on `mail-<account_id>`.
 *
 * The log, not the read model, decides whether a mail went out: before sending, the dispatcher
 * reads the account's mail stream and skips an alert already recorded there. So a read model that
 * lags behind the log, or is being rebuilt by a replay (its docs pending again for a moment), never
 * causes a second email. Delivery is at least once: when the send succeeds but the append fails,
 * or two dispatchers race, the mail can go twice, under the same id (the file outbox keeps one
 * file per id; SMTP repeats the same Message-ID).
 *
 * The address is sealed under the account's key (the read model holds it as the log does): it is
 * opened for the send, and recorded sealed. A forgotten account's alerts are never sent.
 *
 * Only alerts of the current month (by the clock) are sent: once the allowance has reset, "you
 * have used 90%" is no longer true. Such an alert stays `pending` in the read model, unsent.
 */
import type { Clock } from '../../src/core/clock.js';
import { startPeriodic } from '../../src/core/periodic.js';
import { foldStream, handleCommand } from '../../src/core/command-handler.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { Mailer } from '../../src/core/mail.port.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import type { Page, ReadStore } from '../../src/core/read-store.port.js';
import { mailOutbox, type MailOutboxDoc } from '../../projections/usage-alerts/usage-alerts.projection.js';
import { mailStream } from '../../src/domain/mail/mail.events.js';
import { mailDecider } from '../../src/domain/mail/mail.decider.js';

export interface AlertDispatcherOptions {
  reads: ReadStore;
  events: EventStore;
  mailer: Mailer;
  /** Opens the sealed addresses. */
  personal: PersonalData;
  clock: Clock;
  /** Pause between passes; default 5 s. The first pass runs one interval after the start. */
  intervalMs?: number;
  /** A failed send (the alert stays pending) or a failed pass. `alertId` names the alert, when one. */
  onError?(err: unknown, alertId?: string): void;
}

export interface AlertDispatcher {
  /** Runs one pass now (after any pass in progress); resolves with the number of emails sent. */
  drain(): Promise<number>;
  /** Stops the timer and waits for a pass in progress. Does not close the mailer. */
  stop(): Promise<void>;
}

export const DEFAULT_ALERT_INTERVAL_MS = 5_000;
const PAGE = 100;
/** Waits after the 1st, 2nd, … consecutive failure of one alert before it is tried again. */
const RETRY_AFTER_MS = [30_000, 120_000, 600_000, 1_800_000, 3_600_000] as const;
const APPEND_ATTEMPTS = 5;

/** Starts the periodic pass; call `stop()` at shutdown. */
export function startAlertDispatcher(options: AlertDispatcherOptions): AlertDispatcher {
  const { reads, events, mailer, personal, clock } = options;
  const interval = options.intervalMs ?? DEFAULT_ALERT_INTERVAL_MS;
  const report = (err: unknown, alertId?: string) => options.onError?.(err, alertId);
  // Kept in memory only: after a restart every pending alert is tried at once.
  const failures = new Map<string, { count: number; retryAt: number }>();

  /** Sends one alert unless the log says it went already; true when this call sent it. */
  async function deliver(doc: MailOutboxDoc & { to: string }, address: string): Promise<boolean> {
    const stream = mailStream(doc.account_id);
    if ((await foldStream(events, mailDecider, stream)).state.has(doc.id)) return false;
    await mailer.send({ id: doc.id, to: address, subject: doc.subject, text: doc.text });
    // Decided again on a conflict: another alert of the account was recorded meanwhile (or this one, by another process).
    const emailed = { type: 'UsageAlertEmailed' as const, data: { alert_event_id: doc.id, to: doc.to, at: clock.now().toISOString() } };
    await handleCommand(events, mailDecider, stream, emailed, clock, { attempts: APPEND_ATTEMPTS });
    return true;
  }

  async function pass(): Promise<number> {
    const now = clock.now();
    const period = now.toISOString().slice(0, 7);
    let sent = 0;
    let cursor: string | null = null;
    do {
      const page: Page<MailOutboxDoc> = await reads.find(
        mailOutbox,
        { status: 'pending', period: { $gte: period } },
        // One call can cross several thresholds at once: 75% goes out before 90%.
        { sort: [['created_at', 1], ['threshold', 1]], limit: PAGE, cursor },
      );
      for (const doc of page.items) {
        if (periodic.stopped) return sent;
        const failed = failures.get(doc.id);
        if (doc.to === null || (failed && failed.retryAt > now.getTime())) continue;
        try {
          const address = await personal.open(doc.account_id, doc.to, 'email');
          if (address !== null && (await deliver({ ...doc, to: doc.to }, address))) sent++;
          failures.delete(doc.id);
        } catch (err) {
          const count = (failed?.count ?? 0) + 1;
          const wait = RETRY_AFTER_MS[Math.min(count, RETRY_AFTER_MS.length) - 1]!;
          failures.set(doc.id, { count, retryAt: now.getTime() + wait });
          report(err, doc.id);
        }
      }
      cursor = page.nextCursor;
    } while (cursor && !periodic.stopped);
    return sent;
  }

  const periodic = startPeriodic(pass, interval, (err) => report(err));
  return periodic;
}
