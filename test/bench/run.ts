import { benchSeedAndReplay } from './seed-replay.bench.js';

// `npm run bench`: every benchmark, medians over several runs, targets beside each figure.
const runs = Number(process.env['BENCH_RUNS'] ?? 3);
const now = process.env['SCORES_NOW'] ?? new Date().toISOString();
process.stdout.write(`benchmarks (runs=${runs}, clock=${now}, node ${process.version})\n`);
await benchSeedAndReplay(runs, now);
