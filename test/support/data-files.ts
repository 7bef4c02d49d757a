import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every file under `dir` (the store, its WAL, the outbox, key files, export bundles), read whole. */
export function everyFile(dir: string): { path: string; bytes: Buffer }[] {
  const out: { path: string; bytes: Buffer }[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...everyFile(path));
    else out.push({ path, bytes: readFileSync(path) });
  }
  return out;
}
