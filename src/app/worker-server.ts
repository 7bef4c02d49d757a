import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import type { Services } from './container.js';
import { startJobs, type RunningJobs, type WorkerName } from './background-workers.js';
import { metricsCallerAllowed } from './http/metrics.routes.js';
import { ListenError } from './listen-error.js';

export interface RunningWorker {
  url: string;
  server: Server;
  /** Resolves once every job has started (rejects when one cannot start: the worker should exit). */
  started: Promise<void>;
  /** Stops the jobs (each finishes what it is doing), closes the health server, then the stores. */
  shutdown(): Promise<void>;
}

/** Each job asked for and its state: `starting` until startJobs resolves, then `running` or `off`. */
type JobStates = () => { name: WorkerName; state: string }[];

/**
 * `scores worker`: the jobs named, and on PORT only `/healthz`, `/readyz` and `/metrics` (a plain
 * node:http server: no API, no pages, nothing a job does not need). It listens first, so that a
 * supervisor sees it alive while the `projections` job catches up (or a consumer group forms);
 * `/readyz` is 200 once every job has started.
 */
export async function startWorker(services: Services, names: readonly WorkerName[], options: { port?: number } = {}): Promise<RunningWorker> {
  let jobs: RunningJobs | null = null;
  const states: JobStates = () => jobs?.states() ?? names.map((name) => ({ name, state: 'starting' }));
  const server = createServer((req, res) => void answer(services, states, req, res));
  await listen(server, options.port ?? services.config.port, services.config.host);
  services.metrics.collectProcessMetrics();
  const started = (async () => {
    const dataset = services.config.demo ? new DemoDataset({ seed: services.config.demoSeed }) : null;
    // The read models are committed by whichever worker owns each (perhaps this one, once its
    // leases are taken): the jobs follow those commits. Started before the jobs, awaited after.
    const following = services.feed.start();
    following.catch(() => undefined); // awaited below; a failed start of the jobs must not leave it unhandled
    jobs = await startJobs(services, names, { dataset, leases: true });
    await following;
  })();
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | null = null;
  const shutdown = () =>
    (closing ??= (async () => {
      await started.catch(() => undefined);
      await jobs?.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await services.close();
    })());
  return { url: `http://localhost:${port}`, server, started, shutdown };
}

async function listen(server: Server, port: number, host: string): Promise<void> {
  server.listen(port, host);
  try {
    await once(server, 'listening');
  } catch (err) {
    throw new ListenError(`cannot listen on ${host}:${port}: ${(err as Error).message}`);
  }
}

async function answer(services: Services, states: JobStates, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  res.setHeader('Cache-Control', 'no-store');
  if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, { status: 'method_not_allowed' });
  if (path === '/healthz') {
    // 503 while the read models this worker follows or writes are not followed (a failure, retried).
    const retrying = services.feed.health.state === 'retrying';
    return json(res, retrying ? 503 : 200, { status: retrying ? 'degraded' : 'ok', role: 'worker', time: services.clock.now().toISOString(), projections: services.feed.health });
  }
  if (path === '/readyz') {
    const jobs = states();
    const ready = jobs.every((j) => j.state !== 'starting');
    return json(res, ready ? 200 : 503, { status: ready ? 'ready' : 'starting', role: 'worker', waits_for: 'every job named to start', jobs, projections: services.feed.health });
  }
  if (path === '/metrics' && metricsCallerAllowed(req.socket.remoteAddress, services.config.metricsAllowSubnets, req.headers)) {
    res.setHeader('Content-Type', services.metrics.registry.contentType);
    res.end(await services.metrics.registry.metrics());
    return;
  }
  json(res, 404, { type: 'about:blank', title: 'Not Found', status: 404, detail: `a worker serves /healthz, /readyz and /metrics only, not ${path}` });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', status >= 400 && status !== 503 ? 'application/problem+json' : 'application/json');
  res.end(JSON.stringify(body));
}
