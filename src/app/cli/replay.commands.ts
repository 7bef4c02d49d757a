import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { beginReplay } from '../store-users.js';
import { printer, withServices } from './command-kit.js';

/** `scores replay`: every read model rebuilt from the log. */
export function addReplayCommand(program: Command): void {
  program
    .command('replay')
    .description('Drop every read model and rebuild it from the event log')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      const done = beginReplay(loadConfig().dataDir);
      try {
        await replayAll(out);
      } finally {
        done();
      }
    });
}

/** Drops every read model and rebuilds it from the log (no server may run on the store meanwhile). */
async function replayAll(out: ReturnType<typeof printer>): Promise<void> {
  await withServices(async (s) => {
    const t0 = performance.now();
    let events = 0;
    const counter = s.runner.onEventsApplied((n) => (events += n));
    await s.runner.replay();
    counter();
    await s.runner.stop();
    const seconds = (performance.now() - t0) / 1000;
    out(`rebuilt read models from ${events} events in ${seconds.toFixed(1)} s`, { events, seconds });
  });
}
