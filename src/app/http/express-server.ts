import type { Express } from 'express';
import { IncomingMessage, ServerResponse, createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The HTTP server for an express app, its requests and responses built with the app's own
 * prototypes (`app.request`, `app.response`) from the start.
 *
 * Express gives every request and response those prototypes when it starts handling them, with
 * `Object.setPrototypeOf`. Changing the prototype of a live object makes V8 move it to a fresh
 * hidden class, so the inline caches of every function that then reads a request or a response
 * (express, tsoa, the authentication, node's own HTTP code) see a new shape on every call, turn
 * megamorphic and fall back to slow lookups. Born with the prototype, the objects keep one shape,
 * and express's `setPrototypeOf` finds it already in place and changes nothing. Behaviour is the
 * same as `app.listen()`'s server; `npm run bench` (HTTP) measured about 1.6x the throughput of
 * the metered endpoint on one core, `test/integration/express-server.test.ts` checks
 * the equivalence. (Stack frames name a request `AppRequest` instead of `IncomingMessage`.)
 */
export function createExpressServer(app: Express, options: { connectionsCheckingInterval?: number } = {}): Server {
  // Node's constructors are plain functions (not classes), so ours can run them on an object
  // that already has our prototype. Were they classes one day, the plain server does the same,
  // only slower. (Reflect.construct with our new.target also gives the prototype, but V8 then
  // derives a new hidden class per object: slower than express's own way, measured.)
  if (!plainFunction(IncomingMessage) || !plainFunction(ServerResponse)) return createServer(options, app);
  const initRequest = IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void;
  const initResponse = ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void;
  function AppRequest(this: IncomingMessage, socket: Socket): void {
    initRequest.call(this, socket);
  }
  AppRequest.prototype = app.request;
  function AppResponse(this: ServerResponse, req: IncomingMessage, options?: unknown): void {
    initResponse.call(this, req, options);
  }
  AppResponse.prototype = app.response;
  return createServer(
    {
      ...options,
      IncomingMessage: AppRequest as unknown as typeof IncomingMessage,
      ServerResponse: AppResponse as unknown as typeof ServerResponse,
    },
    app,
  );
}

function plainFunction(f: unknown): boolean {
  return typeof f === 'function' && !/^class\b/.test(Function.prototype.toString.call(f));
}
