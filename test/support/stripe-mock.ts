/**
 * The Stripe suite's parts: stripe-mock (`npm run engines` starts it and prints STRIPE_API_BASE), a
 * recording proxy in front of it (real HTTP both ways: every request the adapter makes, with its
 * Idempotency-Key and form body, and what stripe-mock answered), and events signed with the test
 * webhook secret as Stripe signs them (`stripe.webhooks.generateTestHeaderString`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/** Where stripe-mock listens, or undefined: the suite is then pending (its reason in the pending test's title). */
export const STRIPE_MOCK = process.env['STRIPE_API_BASE'];
export const STRIPE_PENDING = 'runs when STRIPE_API_BASE is set (npm run engines starts stripe-mock)';
/** A key stripe-mock takes (it wants a test key that looks valid) and the webhook secret the suite signs with. */
export const TEST_SECRET_KEY = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc';
export const TEST_WEBHOOK_SECRET = 'whsec_scores_stripe_suite_0123456789';

export interface StripeRequest {
  method: string;
  path: string;
  idempotencyKey: string | null;
  /** The form body, its keys as sent (`line_items[0][price_data][unit_amount]`). */
  form: Record<string, string>;
  status: number;
  response: Record<string, any>;
}

export interface StripeRecorder {
  /** The proxy's base URL: give it as STRIPE_API_BASE. */
  url: string;
  requests: StripeRequest[];
  /** The POSTs to `path` (a regexp over the path without the query). */
  posts(path: RegExp): StripeRequest[];
  close(): Promise<void>;
}

/** A recording proxy in front of stripe-mock at `target`. */
export async function startStripeRecorder(target: string): Promise<StripeRecorder> {
  const requests: StripeRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
      fetch(`${target}${req.url}`, { method: req.method, headers, body: req.method === 'GET' || req.method === 'DELETE' ? undefined : body })
        .then(async (answer) => {
          const text = await answer.text();
          requests.push({
            method: req.method!,
            path: req.url!.split('?')[0]!,
            idempotencyKey: req.headers['idempotency-key'] as string | undefined ?? null,
            form: Object.fromEntries(new URLSearchParams(body)),
            status: answer.status,
            response: JSON.parse(text) as Record<string, any>,
          });
          res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json', 'request-id': answer.headers.get('request-id') ?? '' });
          res.end(text);
        })
        .catch((err: unknown) => {
          res.writeHead(502);
          res.end(String(err));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    posts: (path) => requests.filter((r) => r.method === 'POST' && path.test(r.path)),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The service's Stripe variables for a suite on `recorder`. */
export const stripeEnv = (recorder: StripeRecorder): Record<string, string> => ({ STRIPE_SECRET_KEY: TEST_SECRET_KEY, STRIPE_API_BASE: recorder.url, STRIPE_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET });

let counter = 0;

/** A Stripe event as Stripe sends it: its JSON body and the `Stripe-Signature` header signed with `secret`. */
export function signedEvent(type: string, object: Record<string, unknown>, options: { id?: string; secret?: string } = {}): { id: string; body: string; signature: string } {
  const id = options.id ?? `evt_test_${Date.now().toString(36)}${(counter++).toString(36)}`;
  const body = JSON.stringify({ id, object: 'event', api_version: Stripe.API_VERSION, created: Math.floor(Date.now() / 1000), type, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, data: { object } });
  const signature = new Stripe(TEST_SECRET_KEY).webhooks.generateTestHeaderString({ payload: body, secret: options.secret ?? TEST_WEBHOOK_SECRET });
  return { id, body, signature };
}

/** `checkout.session.completed` for a session paid by `paymentIntent`, with the metadata the adapter wrote on it. */
export function checkoutCompleted(metadata: Record<string, string>, paymentIntent: string, options: { id?: string } = {}) {
  return signedEvent(
    'checkout.session.completed',
    { id: `cs_test_${paymentIntent}`, object: 'checkout.session', mode: 'payment', payment_status: 'paid', status: 'complete', client_reference_id: metadata['account_id'], payment_intent: paymentIntent, metadata },
    options,
  );
}

/** `invoice.paid` or `invoice.payment_failed` for the invoice the adapter created for `period`. */
export function invoiceEvent(type: 'invoice.paid' | 'invoice.payment_failed', accountId: string, period: string, invoiceId = `in_test_${accountId}_${period}`) {
  return signedEvent(type, { id: invoiceId, object: 'invoice', status: type === 'invoice.paid' ? 'paid' : 'open', metadata: { account_id: accountId, period } });
}

/** POSTs a signed event to a server's webhook endpoint. */
export async function deliver(baseUrl: string, event: { body: string; signature: string }): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${baseUrl}/billing/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': event.signature }, body: event.body });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, any>) : {} };
}
