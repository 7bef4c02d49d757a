/**
 * A job's effects outside the store (a webhook's HTTPS request, an alert email), each made only
 * after its lease's check with time to spare (JobLease.check): this owner holds the lease, and will
 * for at least as long as the effect may take, so no other owner can take the job while the effect
 * is in flight unless this process is paused. Otherwise the effect is not made and the call
 * rejects (LeaseLostError, which stops the job, or the store's error when a renewal failed): what
 * the effect was for stays owed to the job's next pass or owner. A job started with these needs no
 * change to be fenced (like fenced-event-store.ts).
 */
import type { JobLease } from './lease.js';
import type { Mailer } from './mail.port.js';
import type { WebhookSender } from './webhook-sender.port.js';

/** The longest one webhook attempt takes: the HTTPS sender's time-out, DNS to the answer (infra/webhooks/https-sender.ts). */
export const WEBHOOK_SEND_SPARE_MS = 10_000;
/** The lease time left an alert email needs before it is handed to the mailer. */
export const MAIL_SEND_SPARE_MS = 10_000;

/** A sender whose `send` rejects, sending nothing, unless the lease holds `spareMs` more. */
export function fencedWebhookSender(sender: WebhookSender, lease: JobLease, spareMs = WEBHOOK_SEND_SPARE_MS): WebhookSender {
  assertSpareFits(lease, spareMs);
  return {
    async send(request) {
      await lease.check(spareMs);
      return sender.send(request);
    },
    refusal: (url) => sender.refusal(url),
  };
}

/** A mailer whose `send` rejects, handing nothing over, unless the lease holds `spareMs` more. */
export function fencedMailer(mailer: Mailer, lease: JobLease, spareMs = MAIL_SEND_SPARE_MS): Mailer {
  assertSpareFits(lease, spareMs);
  return {
    async send(message) {
      await lease.check(spareMs);
      await mailer.send(message);
    },
    forgetRecipient: (address) => mailer.forgetRecipient(address),
    // The job does not own the mailer: closing it is the composition's.
    close: async () => undefined,
  };
}

/** A renewal gives the lease its ttl: a spare as long would refuse every effect. */
function assertSpareFits(lease: JobLease, spareMs: number): void {
  if (spareMs >= lease.options.ttlMs) throw new Error(`job ${lease.options.job}: a lease of ${lease.options.ttlMs} ms cannot hold ${spareMs} ms to spare for an effect`);
}
