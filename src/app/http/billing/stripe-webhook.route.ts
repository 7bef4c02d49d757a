/**
 * `POST /billing/stripe/webhook`: Stripe's events in (docs/billing.md, "Stripe"). The signature
 * (`Stripe-Signature`) is verified on the raw body, byte for byte as Stripe signed it, before
 * anything is read; a bad one is 400 and records nothing. A verified event is handled once by its
 * id (commands/billing/processor-events.handler.ts): a repeat, on this replica or another, is a
 * 200 that changes nothing. A failure to handle it is a 5xx, which Stripe retries.
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { handleProcessorEvent } from '../../../../commands/billing/processor-events.handler.js';
import { WebhookSignatureInvalid, type ProcessorEvent } from '../../../core/billing.port.js';
import { problemOf } from '../../../web/problem.js';
import type { Services } from '../../container.js';
import { sendProblem } from '../problem.js';

export const STRIPE_WEBHOOK_PATH = '/billing/stripe/webhook';

/** Stripe's events are a few kilobytes; this bounds what an unsigned sender can make the process hold. */
const MAX_EVENT_BYTES = 1024 * 1024;

export function registerStripeWebhook(app: Express, services: Services): void {
  app.post(STRIPE_WEBHOOK_PATH, express.raw({ type: () => true, limit: MAX_EVENT_BYTES }), async (req: Request, res: Response, next: NextFunction) => {
    const webhooks = services.billing.processor === 'Stripe' ? services.billing.webhooks : null;
    // Not configured (no Stripe, or no STRIPE_WEBHOOK_SECRET): the path does not exist here.
    if (!webhooks) return next();
    const refuse = (detail: string) => sendProblem(res, problemOf('bad_request', detail, services.baseUrl()));
    const signature = req.get('stripe-signature');
    if (!signature || !Buffer.isBuffer(req.body)) return refuse('A Stripe webhook needs its Stripe-Signature header and a body');
    let event: ProcessorEvent;
    try {
      event = await webhooks.verify(req.body, signature);
    } catch (err) {
      if (err instanceof WebhookSignatureInvalid) return refuse(`The Stripe-Signature does not verify with this endpoint's secret: ${err.message}`);
      return next(err);
    }
    try {
      const handled = await handleProcessorEvent(services, event);
      services.log.info({ stripe_event: event.id, type: event.type, ...handled }, 'stripe event');
      res.status(200).json({ received: true, id: event.id, type: event.type, recorded: handled.recorded, outcome: handled.outcome });
    } catch (err) {
      next(err);
    }
  });
}
