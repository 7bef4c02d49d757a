/**
 * Who a request comes from: the one rule every per-client limit and `/metrics` use.
 *
 * The address is the socket's peer unless `TRUST_PROXY` names the proxies in front of the
 * service; then it is the address the nearest untrusted hop of `X-Forwarded-For` names (express's
 * `trust proxy` setting, which this module feeds). Anyone can write `X-Forwarded-For`, so a
 * service that believed it by default could be made to count one client as many.
 */
import express, { type Request } from 'express';
import ipaddr from 'ipaddr.js';

/** express's `trust proxy`: nothing trusted, the number of proxy hops, or the proxies' addresses and CIDRs. */
export type TrustProxy = false | number | string[];

/** Express's names for address ranges, accepted in `TRUST_PROXY` besides addresses and CIDRs. */
const RANGE_NAMES = 'loopback, linklocal, uniquelocal';

/**
 * `TRUST_PROXY`: unset is `false`; a whole number is a hop count (`1`: the peer is the one proxy);
 * anything else is a comma-separated list of addresses, CIDRs or express's range names
 * (`loopback,10.0.0.0/8`). Throws with the reason for a value express would refuse (`true` too:
 * trusting every peer is what the setting exists to avoid).
 */
export function parseTrustProxy(text: string | undefined): TrustProxy {
  if (text === undefined) return false;
  if (/^\d+$/.test(text)) return Number(text) === 0 ? false : Number(text);
  const list = text.split(',').map((s) => s.trim()).filter(Boolean);
  try {
    // express compiles the setting when it is set: the same check the server's app makes.
    express().set('trust proxy', list);
  } catch (err) {
    throw new Error(`must be a hop count (1) or a comma-separated list of proxy addresses, CIDRs or ${RANGE_NAMES}: ${(err as Error).message}`);
  }
  return list;
}

/**
 * The client's address by the rule above (IPv4 peers of a dual-stack socket in their IPv4 form,
 * so that one client has one spelling), or `unknown` when the socket has already closed.
 */
export function clientAddress(req: Request): string {
  const address = req.ip ?? req.socket.remoteAddress;
  if (!address) return 'unknown';
  return ipaddr.isValid(address) ? ipaddr.process(address).toString() : address;
}

/**
 * `clientAddress(req)`, worked out only when asked: a valid key's call never needs it. The
 * socket's peer is read now (node keeps it once read), so that the answer is the same after the
 * client has gone.
 */
export function clientAddressWhenAsked(req: Request): () => string {
  void req.socket?.remoteAddress;
  return () => clientAddress(req);
}
