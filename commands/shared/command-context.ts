import type { Clock } from '../../src/core/clock.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { ExportFiles } from '../../src/core/export-files.port.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import type { Ids } from '../../src/core/ids.port.js';
import type { Meter } from '../../src/web/meter.port.js';
import type { WebhookSender } from '../../src/core/webhook-sender.port.js';
import type { PersonalData } from '../../src/core/personal-data.port.js';
import type { AllowSubnets } from '../../src/domain/webhooks/address-policy.js';

/**
 * What the write side's REST controllers are built with (the ioc gives it to a controller whose
 * class declares `static readonly context = 'commands'`; every other controller gets the
 * `QueryContext`). The app fills it from its services.
 */
export interface CommandContext {
  events: EventStore;
  clock: Clock;
  /** When a test delivery is made and signed: the wall clock even when `SCORES_NOW` pins `clock`. */
  transportClock: Clock;
  ids: Ids;
  /** The read models a command decides with (an export download finds its bundle there). */
  reads: ReadStore;
  /** `X-Credits-Remaining` of each response (the webhook endpoints and downloads are free). */
  meter: Meter;
  /** Export bundles' files, for downloads. */
  exportFiles: ExportFiles;
  /** Where a failure nobody waits for is reported (a download's record that could not be written). */
  log: { warn(details: object, message: string): void };
  /** The SSRF-safe HTTPS sender of test deliveries. */
  webhookSender: WebhookSender;
  /** Seals webhook secrets before they are written, opens them to sign a test delivery. */
  personal: PersonalData;
  /** WEBHOOK_ALLOW_SUBNETS: subnets a webhook URL may name although the address rules forbid them. */
  webhookAllowSubnets: AllowSubnets;
  /** Resolves once this process enforces the account's latest key changes (5 s at most): a key's new limits are in force when the answer says they are set. */
  keysInForce(accountId: string): Promise<void>;
}
