import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../config.js';
import { openServices } from '../container.js';
import { servingLog } from '../logger.js';
import { parseJobNames, WORKER_NAMES, type WorkerName } from '../background-workers.js';
import { requireSharedStores } from '../roles.js';
import { startWorker } from '../worker-server.js';
import { parsePort, stopOnSignals } from './serve.commands.js';

function jobNames(value: string): WorkerName[] {
  try {
    return parseJobNames(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** `scores worker`: background jobs in their own process, with /healthz, /readyz and /metrics on PORT. */
export function addWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('Run background jobs (no API): /healthz, /readyz and /metrics on PORT; needs the shared engines')
    .option('--jobs <names>', `comma-separated, of: ${WORKER_NAMES.join(', ')} (default: all)`, jobNames)
    .option('--port <port>', 'override PORT (0-65535; 0 picks a free one)', parsePort)
    .action(async (opts: { jobs?: WorkerName[]; port?: number; json?: boolean }) => {
      const config = loadConfig();
      requireSharedStores(config, '`scores worker`');
      const names = opts.jobs ?? [...WORKER_NAMES];
      // The read models are committed per read model, by whichever worker owns each: every worker follows their checkpoints.
      const services = await openServices(config, { readModels: 'follow', log: servingLog(config.logLevel) });
      let running: Awaited<ReturnType<typeof startWorker>>;
      try {
        running = await startWorker(services, names, { port: opts.port });
      } catch (err) {
        await services.close().catch(() => undefined);
        throw err;
      }
      stopOnSignals(() => {
        services.log.info('shutting down: stopping the jobs');
        return running.shutdown();
      });
      services.log.info({ url: running.url, role: 'worker', jobs: names }, 'listening');
      const banner = { listening: running.url, role: 'worker', jobs: names, pid: process.pid };
      process.stderr.write(opts.json ? `${JSON.stringify(banner)}\n` : `scores worker listening on ${running.url} (jobs: ${names.join(', ')})\n`);
      await running.started.catch(async (err: unknown) => {
        await running.shutdown().catch(() => undefined);
        throw err;
      });
      services.log.info({ jobs: names }, 'jobs started');
    });
}
