import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../config.js';
import { startFleet } from '../fleet/fleet.js';
import { parsePort, stopOnSignals, writeDemoKeys } from './serve.commands.js';
import { DEMO_KEY_FILE, readDemoKeys } from '../demo-keys.js';
import { join } from 'node:path';

function count(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > 16) throw new InvalidArgumentError('must be an integer 1-16');
  return n;
}

/** `scores fleet up`: a local scaled deployment (engines, API processes behind a front, workers). */
export function addFleetCommands(program: Command): void {
  const fleet = program.command('fleet').description('A local fleet: API processes behind a front that sends each API key to one of them, and workers');
  fleet
    .command('up')
    .description('Start the engines, the workers, the API processes and the front on PORT; Ctrl-C stops them all')
    .option('--api <n>', 'API processes (1-16)', count, 2)
    .option('--workers <n>', 'worker processes, each running every job (1-16)', count, 2)
    .option('--port <port>', "the front's port (default PORT)", parsePort)
    .option('--json', 'machine-readable output (one JSON line on stderr when listening)')
    .action(async (opts: { api: number; workers: number; port?: number; json?: boolean }) => {
      const config = loadConfig();
      const say = (line: string) => process.stderr.write(`${line}\n`);
      // A Ctrl-C while the fleet starts stops what it started (no process is left behind).
      const starting = new AbortController();
      const abort = () => starting.abort();
      process.once('SIGINT', abort).once('SIGTERM', abort);
      let running;
      try {
        running = await startFleet({ apis: opts.api, workers: opts.workers, port: opts.port ?? config.port, host: config.host, onProgress: opts.json ? undefined : say, signal: starting.signal });
      } catch (err) {
        if (!starting.signal.aborted) throw err;
        say('stopped while starting; every process it started is stopped');
        process.exit(130);
      }
      process.off('SIGINT', abort).off('SIGTERM', abort);
      stopOnSignals(() => running.stop());
      const processes = running.processes.map(({ role, url, pid }) => ({ role, url, pid }));
      if (opts.json) {
        say(JSON.stringify({ listening: running.url, base_url: running.url, processes }));
        return;
      }
      say(`\nscores fleet listening on ${running.url}`);
      for (const p of processes) say(`  ${p.role.padEnd(6)} ${p.url} (pid ${p.pid})`);
      const keys = config.demo ? readDemoKeys(config.dataDir) : [];
      const file = join(config.dataDir, DEMO_KEY_FILE);
      if (keys.length) writeDemoKeys(say, { keys, unknown: [], file, baseUrl: running.url, terminal: Boolean(process.stderr.isTTY) });
      else if (config.demo) {
        // The log already held the demo accounts (an earlier start, another data directory): their keys are hashes only.
        say(`\ndemo API keys: none in ${file}; the demo accounts were made by an earlier start with another data directory.`);
        say('  A new key for a demo account (printed once): npx scores keys create --account demo-hobbyist');
      }
      say('\nCtrl-C stops them all.');
    });
}
