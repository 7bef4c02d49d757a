import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { replayIntoNewGeneration } from '../replay-generations.js';
import { beginReplay } from '../store-users.js';
import { printer, withServices } from './command-kit.js';

/** `scores replay`: every read model rebuilt from the log. */
export function addReplayCommand(program: Command): void {
  program
    .command('replay')
    .description('Rebuild every read model from the event log (on a shared read store: into a new generation, switched over while the fleet serves)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      const config = loadConfig();
      if (config.readStore !== 'sqlite') {
        await replayBesideFleet(out);
        return;
      }
      const done = beginReplay(config.dataDir);
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

/** A new generation of every read model, switched over while API processes and workers run (docs/scaling.md). */
async function replayBesideFleet(out: ReturnType<typeof printer>): Promise<void> {
  await withServices(async (s) => {
    const t0 = performance.now();
    const { generation, previous, events } = await replayIntoNewGeneration(s);
    const seconds = (performance.now() - t0) / 1000;
    const how = previous.length ? `into generation ${generation} and switched over (generation ${previous.join(', ')} dropped)` : 'in place (the read store was empty)';
    out(`rebuilt read models from ${events} events ${how} in ${seconds.toFixed(1)} s`, {
      events,
      seconds,
      generation,
      dropped: previous,
    });
  });
}
