import { once } from 'node:events';
import { Agent, createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProxyServer } from 'http-proxy-3';
import type { Front } from './front.types.js';
import { callerOf, chooseMember, hash32, type Member } from './key-routing.js';

/** One API process behind the front, and whether its last /healthz answered. */
interface Backend extends Member {
  url: string;
  healthy: boolean;
}


/**
 * The local fleet's front, over the API processes whose `/healthz` answered at the last check
 * (every `checkMs`), through http-proxy-3 (streams request and response bodies, keeps the Host
 * header's origin out of the backend's way). A request with an API key (or an account session)
 * goes to the live process its key hashes to (key-routing.ts), the next one in the key's order
 * while that one is down; a request without either goes round robin. A request that fails to
 * reach a backend marks it down at once and is answered 502; the next one goes to a live process.
 */
export async function startFront(targets: readonly string[], options: { port: number; host: string; checkMs?: number }): Promise<Front> {
  const backends: Backend[] = targets.map((url) => backendAt(url));
  // Kept-alive connections to the API processes: without an agent the proxy opens a connection per
  // call and sends `Connection: close` both ways, and the front's CPU went to connecting (with a
  // lookup of `localhost` each time) instead of forwarding.
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const proxy = createProxyServer({ xfwd: true, proxyTimeout: 60_000, agent });
  let next = 0;
  const pick = (req: IncomingMessage) => {
    const caller = callerOf(req.headers);
    if (caller !== null) return chooseMember(caller, backends);
    const healthy = backends.filter((b) => b.healthy);
    return healthy.length ? healthy[next++ % healthy.length]! : null;
  };
  const server: Server = createServer((req, res) => {
    const backend = pick(req);
    if (!backend) return void res.writeHead(503, { 'Content-Type': 'application/problem+json' }).end(JSON.stringify({ title: 'No API process answers', status: 503 }));
    proxy.web(req, res, { target: backend.url }, () => {
      backend.healthy = false;
      if (!res.headersSent) res.writeHead(502, { 'Content-Type': 'application/problem+json' }).end(JSON.stringify({ title: 'API process unreachable; retry', status: 502 }));
    });
  });
  const timer = setInterval(() => void checkAll(backends), options.checkMs ?? 1000);
  server.listen(options.port, options.host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    async add(target) {
      backends.push(backendAt(target));
    },
    async close() {
      clearInterval(timer);
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      proxy.close();
    },
  };
}

/** A backend by its URL; `localhost` is dialled as 127.0.0.1 (the API processes listen there), sparing a lookup per connection. The key hash stays the URL's. */
function backendAt(url: string): Backend {
  const dial = new URL(url);
  if (dial.hostname === 'localhost') dial.hostname = '127.0.0.1';
  return { url: dial.origin, hash: hash32(url), healthy: true };
}

async function checkAll(backends: Backend[]): Promise<void> {
  await Promise.all(
    backends.map(async (b) => {
      try {
        b.healthy = (await fetch(`${b.url}/healthz`, { signal: AbortSignal.timeout(800) })).ok;
      } catch {
        b.healthy = false;
      }
    }),
  );
}
