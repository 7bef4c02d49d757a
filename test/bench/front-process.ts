import { startFront } from '../../src/app/fleet/front.js';

// `node dist/test/bench/front-process.js <API process URL>...`: the fleet's front (front.ts) in a
// process of its own, as `scores fleet up` runs it, so that it does not share the load generator's
// thread (scale-out.bench.ts).
const front = await startFront(process.argv.slice(2), { port: 0, host: '127.0.0.1' });
process.once('SIGTERM', () => void front.close().then(() => process.exit(0)));
process.stdout.write(`front listening on ${front.url}\n`);
