import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** Starts `<name>.worker.js` of this folder from dist (compiled), or its `.ts` source under tsx (tests). */
export function startWorker(name: string, workerData: unknown): Worker {
  const js = new URL(`./${name}.worker.js`, import.meta.url);
  if (existsSync(fileURLToPath(js))) return new Worker(js, { workerData });
  // Running from source: register tsx inside the worker, then load the .ts.
  const ts = new URL(`./${name}.worker.ts`, import.meta.url).href;
  const boot = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(ts)}); })`;
  return new Worker(boot, { eval: true, workerData });
}
