import { once } from 'node:events';
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { SingleBar, Presets } from 'cli-progress';
import { advanceDemo } from '../../commands/seed-demo/seed-demo.handler.js';
import { startDemoPublisher } from '../../commands/seed-demo/demo-publisher.reactor.js';
import { startIngestConsumer } from '../../commands/ingest/ingest.reactor.js';
import { ensureDemoAccounts, type DemoAccount } from '../../commands/manage-keys/keys.handler.js';
import { startAlertDispatcher } from '../../commands/send-usage-alerts/usage-alerts.reactor.js';
import { startInvoiceIssuer, type InvoiceIssuer } from '../../commands/billing/invoice.reactor.js';
import { startWebhookDispatcher } from '../../commands/deliver-webhooks/webhook-dispatch.reactor.js';
import { DemoDataset } from '../../commands/seed-demo/dataset/generate.js';
import { parseSchedule, startExportSchedule } from '../../commands/export-bundles/export-schedule.reactor.js';
import type { Services } from './container.js';
import { createApp } from './http/app.js';
import { API_HEADERS, HEADER, newRequestId } from '../web/response-headers.js';
import { createExpressServer } from './http/express-server.js';
import { PROBLEM_JSON } from './http/problem.js';
import { problemOf } from '../web/problem.js';
import { registerServer } from './store-users.js';
import { hashApiKey } from '../domain/accounts/api-keys.js';

/** The server could not listen (address in use, no permission): nothing was served. */
export class ListenError extends Error {}

export interface RunningServer {
  /** Where this process listens. */
  url: string;
  /** The base of the URLs the service writes (PUBLIC_BASE_URL, else `url`). */
  baseUrl: string;
  /** The demo keys the key file holds and that still work, one per tier, when the demo dataset is on. */
  demoKeys: DemoKey[];
  /** The demo accounts whose key cannot be shown (the file is gone, or the key was rotated or revoked). */
  demoKeysUnknown: { tier: string; account_id: string; key_ids: string[] }[];
  /** Where the demo keys are kept (`<SCORES_DATA_DIR>/demo-keys.json`), when the demo dataset is on. */
  demoKeyFile: string | null;
  server: Server;
  /** Issues the invoices of closed months (every 5 s; `drain()` runs a pass now). */
  invoices: InvoiceIssuer;
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

/** `npm start` / `scores serve`: seed when empty, catch up, serve REST on PORT, follow the log. */
export async function startServer(services: Services, options: { progress?: boolean; port?: number } = {}): Promise<RunningServer> {
  // A replay must not run while this process projects into the same read models (src/store-users.ts).
  const unregister = registerServer(services.config.dataDir);
  try {
    return await serve(services, options, unregister);
  } catch (err) {
    unregister();
    throw err;
  }
}

async function serve(services: Services, options: { progress?: boolean; port?: number }, unregister: () => void): Promise<RunningServer> {
  // One simulation of the demo history serves the seed and the live publisher.
  const dataset = services.config.demo ? new DemoDataset({ seed: services.config.demoSeed }) : null;
  await seedIfEmpty(services, { ...options, dataset: dataset ?? undefined });
  const demo = services.config.demo ? keepDemoKeys(services.config.dataDir, await ensureDemoAccounts(services)) : null;
  await catchUpReadModels(services, options);
  const publisher = dataset
    ? startDemoPublisher({
        store: services.events,
        clock: services.clock,
        dataset,
        onError: (err) => services.log.error({ err }, 'demo publisher failed'),
      })
    : null;
  const alerts = startAlertDispatcher({
    reads: services.reads,
    events: services.events,
    mailer: services.mailer,
    clock: services.clock,
    onError: (err, alertId) => services.log.warn({ err, alertId }, 'usage alert email not sent'),
  });
  const webhookDispatcher = await startWebhookDispatcher({
    events: services.events,
    reads: services.reads,
    runner: services.runner,
    clock: services.clock,
    transportClock: services.transportClock,
    sender: services.webhookSender,
    // Sending is a consumer group on it: with Kafka the replicas share the webhooks.
    bus: services.bus,
    onError: (err, at) => services.log.warn({ err, ...at }, 'webhook dispatch failed'),
  });
  const ingestConsumer = await startIngestConsumer({
    bus: services.bus,
    store: services.events,
    clock: services.clock,
    log: (msg) => services.log.warn(msg),
  });

  const invoiceIssuer = startInvoiceIssuer({
    ledger: services.ledger,
    events: services.events,
    reads: services.reads,
    billing: services.billing,
    clock: services.clock,
    onError: (err, month) => services.log.warn({ err, account_id: month?.account_id, period: month?.period }, 'invoice not issued; retried on the next pass'),
  });

  const exportsSchedule = services.config.exportsSchedule
    ? startExportSchedule({
        events: services.events,
        reads: services.reads,
        files: services.exportFiles,
        clock: services.clock,
        ids: services.ids,
        schedule: parseSchedule(services.config.exportsSchedule),
        onRun: (r) => (r.status === 'completed' ? services.log.info({ run_id: r.run_id, seconds: r.seconds }, 'export bundle written') : undefined),
        onError: (err) => services.log.error({ err }, 'export run failed; the next try is in 15 minutes'),
      })
    : null;

  const stopWorkers = async () => {
    await exportsSchedule?.stop();
    await publisher?.stop();
    await alerts.stop();
    await invoiceIssuer.stop();
    await webhookDispatcher.stop();
    await ingestConsumer.stop();
  };

  const app = createApp(services);
  const asked = options.port ?? services.config.port;
  const server = createExpressServer(app).listen(asked, services.config.host);
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
  const { port } = server.address() as AddressInfo;
  services.setListenUrl(`http://localhost:${port}`);

  let closing: Promise<void> | null = null;
  const shutdown = () =>
    (closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // In-flight requests finish; keep-alive sockets that stay idle are closed as they free up.
      const force = setTimeout(() => server.closeAllConnections(), 10_000);
      await closed;
      clearTimeout(force);
      await stopWorkers();
      await services.close();
      unregister();
    })());
  return {
    url: `http://localhost:${port}`,
    baseUrl: services.baseUrl(),
    demoKeys: demo?.shown ?? [],
    demoKeysUnknown: demo?.unknown ?? [],
    demoKeyFile: demo?.file ?? null,
    server,
    invoices: invoiceIssuer,
    shutdown,
  };
}

/** A demo account's key in clear, as `<SCORES_DATA_DIR>/demo-keys.json` keeps it. */
export interface DemoKey {
  tier: string;
  account_id: string;
  key_id: string;
  key: string;
}

export const DEMO_KEY_FILE = 'demo-keys.json';

/**
 * The demo keys kept in `<dataDir>/demo-keys.json` (empty without the file). The demo accounts get
 * random keys on their first start and the store keeps only their hashes, so this file, readable
 * by its owner only, is the one place they can be shown from on later starts.
 */
export function readDemoKeys(dataDir: string): DemoKey[] {
  const file = join(dataDir, DEMO_KEY_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  // A copy of the directory may have widened its mode: keys are for its owner only.
  try {
    if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  } catch {
    // Not this user's file: its owner keeps it.
  }
  const keys = (JSON.parse(text) as { keys?: unknown }).keys;
  return (Array.isArray(keys) ? (keys as Partial<DemoKey>[]) : []).filter((k): k is DemoKey => typeof k?.key === 'string' && typeof k.tier === 'string');
}

/**
 * Writes the keys of the demo accounts created now into the key file (mode 0600, replaced
 * atomically), and tells which demo keys can be shown: those of the file that are still an
 * active key of their account. A key whose file was lost cannot be shown again.
 */
function keepDemoKeys(dataDir: string, accounts: DemoAccount[]): { file: string; shown: DemoKey[]; unknown: RunningServer['demoKeysUnknown'] } {
  const file = join(dataDir, DEMO_KEY_FILE);
  let kept = readDemoKeys(dataDir);
  const created = accounts.flatMap(({ tier, account_id, key, active }) => {
    const issued = key ? active.find((k) => k.key_hash === hashApiKey(key)) : undefined;
    return key && issued ? [{ tier, account_id, key_id: issued.key_id, key }] : [];
  });
  if (created.length) {
    kept = [...kept.filter((k) => !created.some((c) => c.tier === k.tier)), ...created];
    mkdirSync(dataDir, { recursive: true });
    const partial = `${file}.${process.pid}.partial`;
    const note = 'The demo accounts\' API keys, random, created on their first start; the store keeps only their hashes. Keep this file private.';
    writeFileSync(partial, `${JSON.stringify({ note, keys: kept }, null, 2)}\n`, { mode: 0o600 });
    chmodSync(partial, 0o600);
    renameSync(partial, file);
  }
  const shown: DemoKey[] = [];
  const unknown: RunningServer['demoKeysUnknown'] = [];
  for (const a of accounts) {
    const k = kept.find((x) => x.tier === a.tier && x.account_id === a.account_id && a.active.some((act) => act.key_hash === hashApiKey(x.key)));
    if (k) shown.push(k);
    else unknown.push({ tier: a.tier, account_id: a.account_id, key_ids: a.active.map((act) => act.key_id) });
  }
  return { file, shown, unknown };
}

/**
 * Requests node's parser refuses before any handler runs (a method it does not know, a request
 * line or headers over 16 KiB) get a problem+json answer too, not an empty one.
 */
function answerClientError(services: Services): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const problem =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? problemOf('headers_too_large', 'the request line and headers are larger than 16 KiB', services.baseUrl())
        : problemOf('bad_request', 'the request is not valid HTTP/1.1', services.baseUrl());
    const body = JSON.stringify(problem);
    // The headers every express answer carries, and a request id: this answer is a response too.
    const headers = [...API_HEADERS, [HEADER.requestId, newRequestId(services.ids)]].map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.end(
      `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: ${PROBLEM_JSON}; charset=utf-8\r\n${headers}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
}
