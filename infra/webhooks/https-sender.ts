import { X509Certificate } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import ipaddr from 'ipaddr.js';
import { AppError } from '../../src/core/errors.js';
import type { DeliveryResult, WebhookRequest, WebhookSender } from '../../src/core/webhook-sender.port.js';
import { addressRefusal, checkWebhookUrl, ipLiteralHost, type AllowSubnets } from '../../src/domain/webhooks/address-policy.js';
import { isDelivered } from '../../src/domain/webhooks/delivery-policy.js';

export interface HttpsWebhookSenderOptions {
  /** Subnets exempted from the address rules (`WEBHOOK_ALLOW_SUBNETS`). */
  allow?: AllowSubnets;
  /** A PEM file of extra CAs to trust besides node's own (`WEBHOOK_CA_FILE`). */
  caFile?: string | null;
  /** One attempt, DNS to the last byte read; 10 s by default. */
  timeoutMs?: number;
  /** How much of the response is read before the connection is closed; 4 KiB by default. */
  maxResponseBytes?: number;
  userAgent?: string;
  /** The host's addresses; `dns.promises.lookup` by default (tests replace it). */
  resolve?: (host: string) => Promise<string[]>;
}

const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);

const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed while sending',
};

/**
 * POSTs webhooks over https to public addresses only. The host is resolved here, every address it
 * resolves to must pass the policy (one forbidden address refuses the attempt: a name that mixes a
 * public and a private address is not a receiver to trust), and the connection goes to the first
 * of them through a `lookup` that returns exactly that address, so DNS is asked once and cannot
 * answer differently the second time (DNS rebinding). The certificate is checked against the URL's
 * host name. Redirects are not followed; the response body is read up to a cap and discarded.
 */
export class HttpsWebhookSender implements WebhookSender {
  private readonly allow: AllowSubnets;
  /** Node's roots plus WEBHOOK_CA_FILE's, parsed once: a `ca` list per request costs ~18 ms of CPU each. */
  private readonly secureContext: SecureContext | undefined;
  private readonly timeoutMs: number;
  private readonly maxResponseBytes: number;
  private readonly userAgent: string;
  private readonly resolve: (host: string) => Promise<string[]>;

  constructor(options: HttpsWebhookSenderOptions = {}) {
    this.allow = options.allow ?? [];
    // `ca` replaces node's roots, so they are passed along with the extra ones.
    this.secureContext = options.caFile ? createSecureContext({ ca: [...rootCertificates, ...readCaFile(options.caFile)] }) : undefined;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxResponseBytes = options.maxResponseBytes ?? 4096;
    this.userAgent = options.userAgent ?? 'Scores-Webhooks/1';
    this.resolve = options.resolve ?? (async (host) => (await dnsLookup(host, { all: true })).map((a) => a.address));
  }

  async send(request: WebhookRequest): Promise<DeliveryResult> {
    let url: URL;
    try {
      url = checkWebhookUrl(request.url, this.allow);
    } catch (err) {
      const detail = err instanceof AppError ? err.detail : 'webhook URL refused';
      return failure(detail, URL.canParse(request.url) ? hostOf(new URL(request.url)) : '');
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<null>((resolve) => (timer = setTimeout(resolve, this.timeoutMs, null)));
    const timedOut = `timed out after ${this.timeoutMs / 1000} s`;
    try {
      const target = await Promise.race([this.target(url), deadline]);
      if (target === null) return failure(timedOut, hostOf(url));
      if (typeof target !== 'string') return target;
      return await this.post(url, target, request, deadline.then(() => timedOut));
    } finally {
      clearTimeout(timer);
    }
  }

  async refusal(text: string): Promise<string | null> {
    let url: URL;
    try {
      url = checkWebhookUrl(text, this.allow);
    } catch {
      // Not a URL, not https, a forbidden literal address: the registration rules refuse it in their own words.
      return null;
    }
    if (ipLiteralHost(url) !== null) return null;
    const timeout = new Promise<string[]>((resolve) => setTimeout(resolve, this.timeoutMs, []).unref());
    const addresses = await Promise.race([this.resolve(hostOf(url)).catch(() => []), timeout]);
    for (const address of addresses) {
      const refusal = addressRefusal(address, this.allow);
      if (refusal !== null) return refusal;
    }
    return null;
  }

  /** The address to connect to, or the refusal. */
  private async target(url: URL): Promise<string | DeliveryResult> {
    const host = hostOf(url);
    let addresses: string[];
    try {
      addresses = ipLiteralHost(url) !== null ? [host] : await this.resolve(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return failure(code === 'ENOTFOUND' ? 'DNS: no such host' : `DNS: lookup failed (${code ?? 'unknown'})`, host);
    }
    if (addresses.length === 0) return failure('DNS: no address', host);
    for (const address of addresses) {
      const refusal = addressRefusal(address, this.allow);
      if (refusal !== null) return failure(refusal, address);
    }
    return addresses[0]!;
  }

  private post(url: URL, address: string, request: WebhookRequest, deadline: Promise<string>): Promise<DeliveryResult> {
    return new Promise((resolve) => {
      let status: number | null = null;
      let settled = false;
      const finish = (error: string | null) => {
        if (settled) return;
        settled = true;
        req.destroy();
        resolve(error === null && status !== null ? byStatus(status, address) : { ok: false, status_code: status, error, delivered_to: address });
      };
      const family = ipaddr.parse(address).kind() === 'ipv4' ? 4 : 6;
      // With autoSelectFamily (node 20's default) net asks for `all` addresses; either way it gets the checked one.
      const lookup: LookupFunction = (_host, options, callback) => {
        if (options.all) process.nextTick(callback, null, [{ address, family }]);
        else process.nextTick(callback, null, address, family);
      };
      const literal = ipLiteralHost(url) !== null;
      const req = httpsRequest({
        method: 'POST',
        hostname: hostOf(url),
        port: url.port === '' ? 443 : Number(url.port),
        path: url.pathname + url.search,
        headers: {
          ...request.headers,
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(request.body)),
          'User-Agent': this.userAgent,
        },
        lookup,
        // SNI takes names only; an IP literal is checked against the certificate's IP entries.
        ...(literal ? {} : { servername: url.hostname }),
        // tls.connect takes `secureContext`; https.request passes it on, though its type omits it.
        ...({ secureContext: this.secureContext } as object),
        agent: false,
      });
      req.on('socket', (socket: Socket) => {
        const check = () => {
          const refusal = remoteRefusal(socket.remoteAddress, address, this.allow);
          if (refusal !== null) finish(refusal);
        };
        if (socket.connecting) socket.once('connect', check);
        else check();
      });
      req.on('response', (res) => {
        status = res.statusCode ?? null;
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen >= this.maxResponseBytes) finish(null);
        });
        res.on('end', () => finish(null));
        // A body cut short does not change what the status said.
        res.on('error', () => finish(null));
      });
      req.on('error', (err) => finish(failureText(err)));
      // Once a status has arrived, a body that never ends does not turn it into a time-out.
      void deadline.then((timedOut) => finish(status === null ? timedOut : null));
      req.end(request.body);
    });
  }
}

/**
 * The PEM certificates of a CA file, for `WEBHOOK_CA_FILE`; throws a message naming the file when
 * it cannot be read, holds no certificate, or one does not parse.
 */
export function readCaFile(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const pems = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length === 0) throw new Error(`${path} holds no PEM certificate`);
  pems.forEach((pem, i) => {
    try {
      new X509Certificate(pem);
    } catch {
      throw new Error(`${path}: certificate ${i + 1} does not parse`);
    }
  });
  return pems;
}

/** The URL's host as a connection wants it: an IPv6 literal without its brackets. */
function hostOf(url: URL): string {
  return ipLiteralHost(url) ?? url.hostname;
}

function failure(error: string, deliveredTo: string): DeliveryResult {
  return { ok: false, status_code: null, error, delivered_to: deliveredTo };
}

function byStatus(status: number, address: string): DeliveryResult {
  if (isDelivered(status)) return { ok: true, status_code: status, error: null, delivered_to: address };
  const error = status >= 300 && status < 400 ? `redirect (${status}) refused` : `receiver answered ${status}`;
  return { ok: false, status_code: status, error, delivered_to: address };
}

/** The address the socket reached must be the one checked, and still pass the policy. */
function remoteRefusal(remote: string | undefined, expected: string, allow: AllowSubnets): string | null {
  if (remote === undefined || !ipaddr.isValid(remote)) return 'connected to an unknown address';
  if (ipaddr.process(remote).toNormalizedString() !== ipaddr.process(expected).toNormalizedString()) {
    return `connected to ${remote}, not the checked ${expected}`;
  }
  return addressRefusal(remote, allow);
}

/** Our own words for a failed connection: a code, never a message a receiver could have shaped. */
function failureText(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  if (UNTRUSTED.has(code)) return 'TLS: certificate not trusted';
  if (code === 'CERT_HAS_EXPIRED') return 'TLS: certificate expired';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return 'TLS: certificate does not name the host';
  if (/^(ERR_SSL_|ERR_TLS_|CERT_)/.test(code)) return `TLS: ${code}`;
  if (code.startsWith('HPE_')) return `invalid HTTP response (${code})`;
  return NETWORK[code] ?? (code ? `connection failed (${code})` : 'connection failed');
}
