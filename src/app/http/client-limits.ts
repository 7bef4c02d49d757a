/**
 * What one client may hold of the HTTP server, so that a flood or a slow client costs the service
 * little and leaves the other customers' calls as they were (docs/operations.md, "Slow clients and
 * floods"):
 *
 * - time: the request line and headers within `headersTimeoutMs`, the whole request within
 *   `requestTimeoutMs` (node's own timers), and a body at `bodyMinBytesPerSecond` on average once
 *   its first `bodyTimeoutMs` have passed; else 408 `request_timeout` and the connection closed.
 *   An idle keep-alive connection is closed after `keepAliveTimeoutMs`.
 * - connections: at most `maxConnectionsPerClient` open from one peer address; more are closed as
 *   they are accepted, before node reads a byte of them.
 * - requests in flight: at most `maxRequestsInFlightPerClient` per API key (per client address for
 *   requests without one); more are refused 429 `rate_limited`, before the key is even looked up.
 * - a connection answered 429 `rate_limited` is not read again for a second (the least any
 *   `Retry-After` asks): a client that keeps sending on it is paced, and a flood over a few
 *   connections costs the service one refusal per connection per second.
 *
 * A proxy that `TRUST_PROXY` names carries many clients on its connections: neither the connection
 * cap nor the pause applies to its address (the requests in flight are counted per key or per the
 * client it names, as everywhere).
 */
import type { Express, RequestHandler, Response } from 'express';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { problemOf } from '../../web/problem.js';
import { HEADER, NO_STORE } from '../../web/response-headers.js';
import { clientAddress } from './client-address.js';
import { PROBLEM_CODE_LOCAL, sendProblem } from './problem.js';

export interface ClientLimits {
  /** `HTTP_HEADERS_TIMEOUT_MS`: the request line and headers must have arrived within it. */
  headersTimeoutMs: number;
  /** `HTTP_REQUEST_TIMEOUT_MS`: the whole request, body included, must have arrived within it. */
  requestTimeoutMs: number;
  /** `HTTP_KEEP_ALIVE_TIMEOUT_MS`: how long a connection may stay idle between two requests. */
  keepAliveTimeoutMs: number;
  /** `HTTP_BODY_TIMEOUT_MS`: the time a body has before `bodyMinBytesPerSecond` applies. */
  bodyTimeoutMs: number;
  /** `HTTP_BODY_MIN_RATE`: bytes per second a body must average after `bodyTimeoutMs`. */
  bodyMinBytesPerSecond: number;
  /** `MAX_CONNECTIONS_PER_CLIENT`: open connections from one peer address (a trusted proxy's: no cap). */
  maxConnectionsPerClient: number;
  /** `MAX_REQUESTS_IN_FLIGHT_PER_CLIENT`: requests under way per API key, or per client address without one. */
  maxRequestsInFlightPerClient: number;
}

/**
 * nginx's and Apache's spirit, tighter where this API's requests are small (bodies of 64 KiB at
 * most): 10 s for the headers (node: 60 s), 60 s for a whole request (node: 300 s), node's 5 s of
 * keep-alive (the fleet's front keeps its connections 4 s, below it: src/app/fleet/nginx-front.ts),
 * 10 s for a body then 1 KiB/s on average (Apache's mod_reqtimeout: `body=20,MinRate=500`).
 * 64 requests in flight per key (GitHub allows 100 concurrent requests) is more than a plan's rate
 * needs (an enterprise key's 500/s at 20 ms a call is 10 in flight) and than the load tests'
 * pools of 50 connections; 128 connections per address leave room for a pool's idle ones.
 */
export const CLIENT_LIMIT_DEFAULTS: Readonly<ClientLimits> = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  bodyTimeoutMs: 10_000,
  bodyMinBytesPerSecond: 1024,
  maxConnectionsPerClient: 128,
  maxRequestsInFlightPerClient: 64,
});

/** How often node checks the header and request timeouts (its default: 30 s): a timeout fires within it. */
export const checkingIntervalMs = (limits: ClientLimits): number => Math.min(1_000, limits.headersTimeoutMs);

/** Whether a socket's peer address is a proxy `TRUST_PROXY` names. */
export type TrustedPeer = (address: string) => boolean;

/** The app's `trust proxy` (TRUST_PROXY, client-address.ts) asked of a peer: is it one of the proxies? */
export function trustedPeerOf(app: Express): TrustedPeer {
  const trust = app.get('trust proxy fn') as (address: string, hop: number) => boolean;
  return (address) => trust(address, 0);
}

/** What is held below express: node's timeouts, the body rate and the connections per address. */
export function holdServerToLimits(server: Server, limits: ClientLimits, trusted: TrustedPeer, baseUrl: () => string): void {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  limitConnections(server, limits.maxConnectionsPerClient, trusted);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (hasBody(req)) watchBody(req, res as Response, limits, baseUrl);
  });
}

/** One spelling per address: the IPv4 form of a dual-stack socket's `::ffff:10.1.2.3`. */
const oneSpelling = (address: string): string => (address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address);

/** Connections beyond `max` from one peer address are destroyed as they are accepted (a trusted proxy's never). */
function limitConnections(server: Server, max: number, trusted: TrustedPeer): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress;
    if (peer === undefined || trusted(peer)) return;
    const address = oneSpelling(peer);
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = open.get(address)! - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}

const hasBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/**
 * Cuts a body that arrives slower than the limits allow: by `bodyTimeoutMs` plus one second per
 * `bodyMinBytesPerSecond` bytes received (the socket's bytes since the headers), it must be whole.
 * The timer wakes at that deadline, not every second, and moves it on as bytes come.
 */
function watchBody(req: IncomingMessage, res: Response, limits: ClientLimits, baseUrl: () => string): void {
  const socket = req.socket;
  const start = performance.now();
  const readBefore = socket.bytesRead;
  const check = (): void => {
    if (req.complete || socket.destroyed) return;
    const due = start + limits.bodyTimeoutMs + ((socket.bytesRead - readBefore) / limits.bodyMinBytesPerSecond) * 1000;
    const wait = due - performance.now();
    if (wait > 0) {
      timer = setTimeout(check, wait).unref();
      return;
    }
    cutBody(socket, res, limits, baseUrl);
  };
  let timer = setTimeout(check, limits.bodyTimeoutMs).unref();
  req.once('close', () => clearTimeout(timer));
}

/** 408 `request_timeout` while the response has not begun, and the connection closed; else the connection destroyed. */
function cutBody(socket: Socket, res: Response, limits: ClientLimits, baseUrl: () => string): void {
  if (res.headersSent || !socket.writable) {
    socket.destroy();
    return;
  }
  res.setHeader('Connection', 'close');
  const detail = `the request body arrived slower than ${limits.bodyMinBytesPerSecond} bytes per second after its first ${limits.bodyTimeoutMs / 1000} s: the connection is closed`;
  sendProblem(res, problemOf('request_timeout', detail, baseUrl()));
}

/**
 * At most `max` requests in flight per API key, or per client address for requests without one:
 * more are refused 429 `rate_limited` (Retry-After 1) before anything else is done for them. The
 * key is counted as sent, unchecked: checking it is work a refused request must not cost. Every
 * connection answered 429 `rate_limited`, here or by the request rate, is paused (see the top).
 */
export function limitRequestsInFlight(max: number, trusted: TrustedPeer, baseUrl: () => string): RequestHandler {
  const inFlight = new Map<string, number>();
  const release = (client: string): void => {
    const left = inFlight.get(client)! - 1;
    if (left === 0) inFlight.delete(client);
    else inFlight.set(client, left);
  };
  return (req, res, next) => {
    const key = req.headers['x-api-key'];
    const client = typeof key === 'string' && key !== '' ? `key ${key}` : `address ${clientAddress(req)}`;
    const count = (inFlight.get(client) ?? 0) + 1;
    if (count > max) {
      res.once('close', () => pauseIfRefused(req, res, trusted));
      const who = client.startsWith('key') ? 'this API key' : 'your address';
      // A refusal is never to be kept by a cache (the private paths' answers never are: private-responses.ts).
      res.setHeader(HEADER.cacheControl, NO_STORE);
      sendProblem(res, problemOf('rate_limited', `${who} has ${max} requests in flight, the most it may have at once; retry in 1 s`, baseUrl(), { retry_after_seconds: 1 }));
      return;
    }
    inFlight.set(client, count);
    res.once('close', () => {
      release(client);
      pauseIfRefused(req, res, trusted);
    });
    next();
  };
}

/** How long a connection answered 429 `rate_limited` is not read: the least a `Retry-After` asks. */
export const REFUSED_PAUSE_MS = 1_000;

/**
 * A connection whose request was refused 429 `rate_limited` is not read for REFUSED_PAUSE_MS. Not
 * while the request's body is still coming (node reads it off the wire after the answer), nor for
 * a trusted proxy's connection, which carries other clients' requests too.
 */
function pauseIfRefused(req: IncomingMessage, res: Response, trusted: TrustedPeer): void {
  if (res.statusCode !== 429 || res.locals[PROBLEM_CODE_LOCAL] !== 'rate_limited' || !req.complete) return;
  const socket = req.socket;
  const peer = socket.remoteAddress;
  if (socket.destroyed || peer === undefined || trusted(peer)) return;
  socket.pause();
  setTimeout(() => socket.resume(), REFUSED_PAUSE_MS).unref();
}
