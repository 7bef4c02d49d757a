import type { Services } from '../../src/app/container.js';

/** Every document of every read model, by collection, in id order. */
export async function snapshotReadModels(services: Services): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const def of services.runner.collections) {
    const docs: unknown[] = [];
    for await (const doc of services.reads.scan(def)) docs.push(doc);
    out[def.name] = docs;
  }
  return out;
}
