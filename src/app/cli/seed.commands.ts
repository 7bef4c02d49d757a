import type { Command } from 'commander';
import { catchUpReadModels, seedIfEmpty } from '../server.js';
import { printer, withServices } from './command-kit.js';

/** `scores seed`: the demo history up to the clock, then the read models caught up. */
export function addSeedCommand(program: Command): void {
  program
    .command('seed')
    .description('Write the demo publication history up to the clock (SCORES_NOW or now); idempotent')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      await withServices(async (s) => {
        const head0 = await s.events.headPosition();
        const demo = s.config.demo;
        await seedIfEmpty(s, { progress: !opts.json && process.stdout.isTTY });
        await catchUpReadModels(s, { progress: !opts.json && process.stdout.isTTY });
        const head = await s.events.headPosition();
        out(
          demo
            ? `demo history written through ${s.clock.now().toISOString()} (log head ${head})`
            : `the demo dataset is off (SCORES_DEMO=off): nothing written (log head ${head}); read models caught up`,
          { before: head0, head, demo },
        );
      });
    });
}
