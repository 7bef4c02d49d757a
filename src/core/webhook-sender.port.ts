/**
 * Webhook sender port: one POST attempt of a signed JSON envelope to a customer's URL.
 * Adapter: infra/webhooks/https-sender.ts (node's https, with the address policy of
 * src/domain/webhooks/address-policy.ts). Retries and their schedule are the caller's.
 */

export interface WebhookRequest {
  /** The registered https URL. */
  url: string;
  /** The JSON envelope, sent as it is (the signature covers these exact bytes). */
  body: string;
  /** The signature headers and the like; the sender sets Content-Type, Content-Length and User-Agent itself. */
  headers: Record<string, string>;
}

/** How one attempt ended. A send never rejects: every failure is a result. */
export interface DeliveryResult {
  /** The receiver answered 2xx. */
  ok: boolean;
  /** The receiver's status, null when none arrived (refused address, DNS, TLS, time-out). */
  status_code: number | null;
  /**
   * Our own short description of a failure ('timed out after 10 s', 'address 10.0.0.5 is private',
   * 'redirect (302) refused', 'TLS: certificate not trusted'), null on success. Never text of the
   * receiver's: its body is read only to be discarded.
   */
  error: string | null;
  /**
   * The IP address the attempt connected to, or the one it refused; the URL's host when it got no
   * address (DNS failure), '' for a URL that does not parse.
   */
  delivered_to: string;
}

export interface WebhookSender {
  send(request: WebhookRequest): Promise<DeliveryResult>;
  /**
   * Why a URL's host may not be registered, judged as a delivery would judge it now (the addresses
   * it resolves to against the rules), or null. A name that does not resolve is not refused here
   * (every delivery resolves it again and fails then), nor is a URL the registration rules refuse.
   */
  refusal(url: string): Promise<string | null>;
}
