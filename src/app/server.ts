import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SingleBar, Presets } from 'cli-progress';
import type { Express } from 'express';
import { advanceDemo } from '../../commands/seed-demo/seed-demo.handler.js';
import { ensureDemoAccounts } from '../../commands/manage-keys/keys.handler.js';
import { accountStream } from '../domain/accounts/account.events.js';
import type { InvoiceIssuer } from '../../commands/billing/invoice.reactor.js';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { warnIfLocalDataKey, warnIfUnsigned, type Services } from './container.js';
import { createApp } from './http/app.js';
import { createExpressServer } from './http/express-server.js';
import { answerClientError } from './http/client-error.js';
import { checkingIntervalMs, holdServerToLimits, trustedPeerOf } from './http/client-limits.js';
import { mcpRoutes } from './mcp/mcp.routes.js';
import { registerServer } from './store-users.js';
import { startJobs, WORKER_NAMES, type RunningJobs } from './background-workers.js';
import { ListenError } from './listen-error.js';
import { followReadModels } from './read-model-follower.js';
import { keepDemoKeys, type DemoKey, type UnknownDemoKey } from './demo-keys.js';

export { ListenError };

export interface RunningServer {
  /** Where this process listens. */
  url: string;
  /** The base of the URLs the service writes (PUBLIC_BASE_URL, else `url`). */
  baseUrl: string;
  /** The demo keys the key file holds and that still work, one per tier, when the demo dataset is on. */
  demoKeys: DemoKey[];
  /** The demo accounts whose key cannot be shown (the file is gone, or the key was rotated or revoked). */
  demoKeysUnknown: UnknownDemoKey[];
  /** Where the demo keys are kept (`<SCORES_DATA_DIR>/demo-keys.json`), when the demo dataset is on. */
  demoKeyFile: string | null;
  server: Server;
  /** Issues the invoices of closed months (every 5 s; `drain()` runs a pass now); null under `--role api`. */
  invoices: InvoiceIssuer | null;
  /** Stops accepting, lets in-flight requests finish, then closes the stores cleanly. */
  shutdown(): Promise<void>;
}

/** A progress bar on a terminal, or null (`enabled` false: no terminal, or JSON output). */
export function progressBar(label: string, enabled: boolean): SingleBar | null {
  if (!enabled) return null;
  return new SingleBar({ format: `${label} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}`, hideCursor: true }, Presets.shades_classic);
}

/**
 * Writes the demo's publication history up to the clock: all of it into an empty store (with a
 * progress bar on a terminal), else only what was published since the last start. Returns
 * whether the store was empty. `dataset` lets a caller share one simulation with the publisher.
 */
export async function seedIfEmpty(
  services: Services,
  options: { progress?: boolean; dataset?: DemoDataset } = {},
): Promise<boolean> {
  if (!services.config.demo) return false;
  const dataset = options.dataset ?? new DemoDataset({ seed: services.config.demoSeed });
  const empty = (await services.events.headPosition()) === null;
  const bar = empty ? progressBar('seeding demo history ', options.progress ?? process.stdout.isTTY) : null;
  let started = false;
  const result = await advanceDemo({
    store: services.events,
    clock: services.clock,
    dataset,
    onProgress: (done, total) => {
      if (!bar) return;
      if (!started) {
        bar.start(total, 0);
        started = true;
      }
      bar.update(done);
    },
  });
  bar?.stop();
  if (result.appends > 0) services.log.info({ appends: result.appends, events: result.events, through: result.through }, 'demo history written');
  return empty && result.appends > 0;
}

/** Brings the read models up to the log, showing progress when there is much to do. */
export async function catchUpReadModels(services: Services, options: { progress?: boolean } = {}): Promise<void> {
  const head = await services.events.headPosition();
  const bar = progressBar('building read models  ', (options.progress ?? process.stdout.isTTY) && head !== null);
  const headN = head ? Number(head.split(':')[0]) : 0;
  let started = false;
  const stopProgress = services.runner.onProgressChange((position) => {
    if (!bar || !Number.isFinite(headN) || headN === 0) return;
    if (!started) {
      bar.start(headN, 0);
      started = true;
    }
    bar.update(Math.min(headN, Number(position.split(':')[0])));
  });
  await services.runner.start();
  stopProgress();
  if (started) bar?.update(headN);
  bar?.stop();
}

/**
 * What a serving process runs: `all` (`npm start`, `scores serve`): every background job beside
 * the API, on any store; `api` (`scores serve --role api`): the API alone, reading the read models
 * a worker's `projections` job writes (its services opened with `readModels: 'follow'`).
 */
export type ServeRole = 'all' | 'api';

export interface ServeOptions {
  progress?: boolean;
  port?: number;
  role?: ServeRole;
}

/** `npm start` / `scores serve`: seed when empty, catch up, serve REST on PORT, follow the log. */
export async function startServer(services: Services, options: ServeOptions = {}): Promise<RunningServer> {
  // A replay must not run while this process projects into the same read models (src/app/store-users.ts).
  const unregister = registerServer(services.config.dataDir);
  try {
    return await serve(services, options, unregister);
  } catch (err) {
    unregister();
    throw err;
  }
}

async function serve(services: Services, options: ServeOptions, unregister: () => void): Promise<RunningServer> {
  // One simulation of the demo history serves the seed and the live publisher.
  const dataset = services.config.demo ? new DemoDataset({ seed: services.config.demoSeed }) : null;
  await seedIfEmpty(services, { ...options, dataset: dataset ?? undefined });
  const demoAccounts = services.config.demo ? await ensureDemoAccounts(services) : [];
  const demo = services.config.demo ? keepDemoKeys(services.config.dataDir, demoAccounts) : null;
  const jobs = options.role === 'api' ? await followWorkersReadModels(services, demoAccounts.map((a) => a.account_id)) : await runAllJobs(services, options, dataset);
  warnIfUnsigned(services, '/v1/usage/ledger pages');
  warnIfLocalDataKey(services);
  // MCP is served over HTTP: mounted here, so that src/app/http never imports src/app/mcp.
  const app = createApp(services, [mcpRoutes(services)]);
  const server = await listen(services, app, options.port ?? services.config.port, () => jobs.stop());
  const { port } = server.address() as AddressInfo;
  services.setListenUrl(`http://localhost:${port}`);
  return {
    url: `http://localhost:${port}`,
    baseUrl: services.baseUrl(),
    demoKeys: demo?.shown ?? [],
    demoKeysUnknown: demo?.unknown ?? [],
    demoKeyFile: demo?.file ?? null,
    server,
    invoices: jobs.invoices,
    shutdown: shutdownOnce(server, async () => {
      await jobs.stop();
      await services.close();
      unregister();
    }),
  };
}

/** All-in-one: the projector runner (with its progress bar), then every other job. */
async function runAllJobs(services: Services, options: ServeOptions, dataset: DemoDataset | null): Promise<RunningJobs> {
  await catchUpReadModels(services, options);
  // The runner stops with the stores (services.close), as before the roles.
  return startJobs(services, WORKER_NAMES.filter((n) => n !== 'projections'), { dataset });
}

/**
 * `--role api`: no job; the feed follows the checkpoints the workers' `projections` job commits.
 * It listens once the read models hold this process's own writes (the demo accounts, whose keys
 * it prints), and does not wait for the rest of the log: the read models are shared, so a new
 * replica serves them as fresh as its siblings do, and under load (a projector behind the
 * metering) a replica that waited for the head would not start for minutes.
 */
async function followWorkersReadModels(services: Services, ownAccounts: readonly string[]): Promise<RunningJobs> {
  const own = await lastPositionOf(services, ownAccounts.map(accountStream));
  const following = followReadModels(services.feed, (err) => services.log.error({ err }, 'read-model follower failed while catching up; again in 1 s'), own);
  await following.caughtUp;
  return {
    states: () => [],
    readModels: () => [],
    invoices: null,
    stop: () => following.stop(),
  };
}

/** The position of the last event of any of `streams` (null when they are all empty). */
async function lastPositionOf(services: Services, streams: readonly string[]): Promise<string | null> {
  let last: string | null = null;
  for (const stream of streams) {
    const position = (await services.events.readStream(stream)).at(-1)?.position ?? null;
    if (position !== null && (last === null || position > last)) last = position;
  }
  return last;
}

/** Listens on `asked`; when it cannot, stops the workers and throws a ListenError with the reason. */
async function listen(services: Services, app: Express, asked: number, stopWorkers: () => Promise<void>): Promise<Server> {
  const limits = services.config.clientLimits;
  const server = createExpressServer(app, { connectionsCheckingInterval: checkingIntervalMs(limits) });
  holdServerToLimits(server, limits, trustedPeerOf(app), () => services.baseUrl());
  server.listen(asked, services.config.host);
  try {
    await once(server, 'listening');
  } catch (err) {
    // Nothing serves: stop what was started, so that the process can exit with the reason.
    await stopWorkers();
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EADDRINUSE' ? 'the address is in use' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    throw new ListenError(`cannot listen on ${services.config.host}:${asked}: ${why}`);
  }
  server.on('clientError', answerClientError(services));
  return server;
}

/** The one shutdown, however often asked: the server stops accepting and its requests finish, then `release` runs. */
function shutdownOnce(server: Server, release: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | null = null;
  return () =>
    (closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // In-flight requests finish; keep-alive sockets that stay idle are closed as they free up.
      const force = setTimeout(() => server.closeAllConnections(), 10_000);
      await closed;
      clearTimeout(force);
      await release();
    })());
}
