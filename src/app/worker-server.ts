import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import type { Services } from './container.js';
import { startJobs, type RunningJobs, type WorkerName } from './background-workers.js';
import { metricsCallerAllowed } from './http/metrics.routes.js';
import { ListenError } from './listen-error.js';
import { projectionLags } from './metrics/projection-lag.js';
import { allProjections } from '../../projections/index.js';
import { followReadModels, type Following } from './read-model-follower.js';

export interface RunningWorker {
  url: string;
  server: Server;
  /** Resolves once every job has started (rejects when one cannot start: the worker should exit). */
  started: Promise<void>;
  /** Stops the jobs (each finishes what it is doing), closes the health server, then the stores. */
  shutdown(): Promise<void>;
}

/**
 * Each job asked for and its state (`starting` until startJobs resolved, then the job's own:
 * JobState), and under `projections` each read model's unit.
 */
type JobStates = () => { jobs: { name: WorkerName; state: string }[]; readModels: { name: string; state: string }[] };

/**
 * `scores worker`: the jobs named, and on PORT only `/healthz`, `/readyz` and `/metrics` (a plain
 * node:http server: no API, no pages, nothing a job does not need). It listens first, so that a
 * supervisor sees it alive while the `projections` job catches up (or a consumer group forms);
 * `/readyz` is 200 once no job is `starting` (its lease asked for, or taken here and the job
 * starting: a hand-over makes it 503 a moment).
 */
export async function startWorker(services: Services, names: readonly WorkerName[], options: { port?: number } = {}): Promise<RunningWorker> {
  let jobs: RunningJobs | null = null;
  const states: JobStates = () => ({ jobs: jobs?.states() ?? names.map((name) => ({ name, state: 'starting' })), readModels: jobs?.readModels() ?? [] });
  const server = createServer((req, res) => void answer(services, states, req, res));
  await listen(server, options.port ?? services.config.port, services.config.host);
  services.metrics.collectProcessMetrics();
  let following: Following | null = null;
  const started = (async () => {
    const dataset = services.config.demo ? new DemoDataset({ seed: services.config.demoSeed }) : null;
    // The read models are committed by whichever worker owns each (perhaps this one, once its
    // leases are taken): this worker follows those commits. Its other jobs ask for their leases at
    // once, on the read models as they are: those are shared, and a job handed over by a dead owner
    // ran on them as they were. (Waiting for them to hold the log as of this start kept a
    // replacement from taking over for minutes while the projector lagged behind the load.)
    following = followReadModels(services.feed, (err) => services.log.error({ err }, 'read-model follower failed while catching up; again in 1 s'), null);
    jobs = await startJobs(services, names, { dataset, leases: true });
  })();
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | null = null;
  const shutdown = () =>
    (closing ??= (async () => {
      await started.catch(() => undefined);
      await jobs?.stop();
      await following?.stop();
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
    const { jobs, readModels } = states();
    const ready = jobs.every((j) => j.state !== 'starting');
    const waitsFor = 'every job named to run here or stand by for another owner (none starting)';
    const progress = await readModelsProgress(services);
    return json(res, ready ? 200 : 503, { status: ready ? 'ready' : 'starting', role: 'worker', waits_for: waitsFor, jobs, read_models: readModels, projections: services.feed.health, ...progress });
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

type Progress = { log_position: string | null; lag_events: number } | Record<string, never>;

/** The last figure of each worker's services, and when it was read. */
const lastProgress = new WeakMap<Services, { at: number; progress: Promise<Progress> }>();

/**
 * How far the read models are behind the log (the least advanced projection), for a person watching
 * a start; nothing when the stores cannot tell. Read at most once a second: /readyz is polled (by
 * a supervisor, by the fleet every 100 ms in its tests), and each read is the log's head and a
 * checkpoint per projection.
 */
function readModelsProgress(services: Services): Promise<Progress> {
  const last = lastProgress.get(services);
  if (last && performance.now() - last.at < 1_000) return last.progress;
  const sources = { events: services.events, reads: services.reads, clock: services.clock, projections: allProjections().map((p) => p.name) };
  const progress = projectionLags(sources, { cap: LAG_COUNT_CAP, seconds: false }).then(
    ({ head, lags }) => ({ log_position: head, lag_events: Math.max(0, ...lags.map((l) => l.events)) }),
    () => ({}),
  );
  lastProgress.set(services, { at: performance.now(), progress });
  return progress;
}

/** Where positions are not event numbers (EventStoreDB), lags are counted up to this. */
const LAG_COUNT_CAP = 100_000;
