import { InvalidArgumentError, Option, type Command } from 'commander';
import { loadConfig } from '../config.js';
import { openServices } from '../container.js';
import { servingLog } from '../logger.js';
import { requireSharedStores } from '../roles.js';
import { startServer, type ServeRole } from '../server.js';
import type { DemoKey, UnknownDemoKey } from '../demo-keys.js';

/** `--port`: an integer 0-65535. */
export function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n > 65535) {
    throw new InvalidArgumentError('must be an integer 0-65535 (0 picks a free port)');
  }
  return n;
}

/** `scores serve`: REST and MCP until SIGINT or SIGTERM. */
export function addServeCommand(program: Command): void {
  program
    .command('serve')
    .description('Serve REST and MCP on PORT; seeds the demo into an empty store first')
    .option('--port <port>', 'override PORT (0-65535; 0 picks a free one)', parsePort)
    .addOption(
      new Option('--role <role>', 'api: REST, MCP and pages only, no background job (the jobs run in `scores worker`; needs the shared engines)').choices(['api', 'all']).default('all'),
    )
    .action(async (opts: { port?: number; json?: boolean; role: ServeRole }) => {
      const config = loadConfig();
      if (opts.role === 'api') requireSharedStores(config, '`scores serve --role api`');
      const services = await openServices(config, { readModels: opts.role === 'api' ? 'follow' : 'project', log: servingLog(config.logLevel) });
      let running: Awaited<ReturnType<typeof startServer>>;
      try {
        running = await startServer(services, { port: opts.port, role: opts.role });
      } catch (err) {
        // Nothing serves: close the stores (their threads would keep the process alive).
        await services.close().catch(() => undefined);
        throw err;
      }
      // Before the "listening" line: whoever waits for it (a supervisor, a test) may stop the
      // process at once, and the stop must be the clean one (in-flight requests, stores, run lock).
      stopOnSignals(() => {
        services.log.info('shutting down: finishing in-flight requests');
        return running.shutdown();
      });
      services.log.info({ url: running.url, base_url: running.baseUrl, role: opts.role, demo_key_file: running.demoKeyFile }, 'listening');
      printStartBanner(running, Boolean(opts.json));
    });
}

/** How long a clean stop may take before the process exits anyway (a supervisor kills at 30 s). */
const SHUTDOWN_GRACE_MS = 25_000;

/**
 * On the first SIGINT or SIGTERM: `shutdown`, then exit 0; exit 1 if it takes longer than
 * SHUTDOWN_GRACE_MS (a store or broker that does not answer must not keep the process up: what was
 * acknowledged is durable, and what a job had in hand is done again by its next owner).
 */
export function stopOnSignals(shutdown: () => Promise<void>): void {
  const stop = () => {
    setTimeout(() => {
      process.stderr.write(`shutdown: not finished within ${SHUTDOWN_GRACE_MS / 1000} s; exiting\n`);
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    void shutdown().then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/**
 * The start banner, on stderr: stdout is the JSON log stream (a log shipper stores it), and a
 * demo key's value is shown only on a terminal, where a person reads it; elsewhere the banner names
 * `<SCORES_DATA_DIR>/demo-keys.json`. The demo accounts got random keys on their first start and
 * the store keeps only hashes, so a key the file no longer holds cannot be shown again.
 */
function printStartBanner(running: Awaited<ReturnType<typeof startServer>>, json: boolean): void {
  const terminal = Boolean(process.stderr.isTTY);
  const demoKeys = running.demoKeys.map(({ key, ...k }) => (terminal ? { ...k, key } : k));
  const openapi = `${running.baseUrl}/openapi.json`;
  if (json) {
    const banner = { listening: running.url, base_url: running.baseUrl, openapi, demo_key_file: running.demoKeyFile, demo_keys: demoKeys, demo_keys_unknown: running.demoKeysUnknown };
    process.stderr.write(`${JSON.stringify(banner)}\n`);
    return;
  }
  const w = (line: string) => process.stderr.write(`${line}\n`);
  w(`\nscores service listening on ${running.url}\n  base URL: ${running.baseUrl}\n  OpenAPI:  ${openapi}`);
  if (!running.demoKeyFile) return;
  writeDemoKeys(w, { keys: running.demoKeys, unknown: running.demoKeysUnknown, file: running.demoKeyFile, baseUrl: running.baseUrl, terminal });
}

/** The demo keys part of a start banner (`scores serve`, `scores fleet up`): values on a terminal only. */
export function writeDemoKeys(
  w: (line: string) => void,
  demo: { keys: readonly DemoKey[]; unknown: readonly UnknownDemoKey[]; file: string; baseUrl: string; terminal: boolean },
): void {
  const { terminal } = demo;
  w(`\ndemo API keys (one per tier; send as X-API-Key; kept in ${demo.file}, readable by its owner only${terminal ? '' : '; shown on a terminal only'}):`);
  for (const k of demo.keys) w(`  ${k.tier.padEnd(10)} ${terminal ? k.key : `${k.key_id} (${k.account_id})`}`);
  for (const u of demo.unknown) w(`  ${u.tier.padEnd(10)} not in the file, cannot be shown again (active: ${u.key_ids.join(', ') || 'none'})`);
  if (demo.unknown.length) {
    w('  Demo keys are random and written only to that file, on their first start; the store keeps their hashes.');
    w('  A new key for an account (printed once, not added to the file):');
    w('  npx scores keys rotate <key_id>');
  }
  const example = demo.keys.find((k) => k.tier === 'hobbyist') ?? demo.keys[0];
  if (example && terminal) w(`\ntry: curl -H 'X-API-Key: ${example.key}' ${demo.baseUrl}/v1/scores/AAPL`);
}
