import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project's root (the folder holding package.json), from source (tsx) or from dist/. */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'tsconfig.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('project root not found');
    dir = up;
  }
}
