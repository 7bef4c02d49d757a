/**
 * Owner-only JSON files of the data directory that hold keys (the ledger signing key, the data
 * keys): read, created once by whichever process comes first, replaced whole. Never seen half
 * written: a new file is linked into place, a replacement renamed over the old one.
 */
import { chmodSync, linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { narrow, PRIVATE_DIR, PRIVATE_FILE } from '../../src/core/private-files.js';

/** The parsed file, or null when there is none. */
export function readPrivateJson(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    narrow(path); // a copy of the directory may have widened it: the keys are for its owner only
  } catch {
    // Not this user's file: its owner keeps it.
  }
  return JSON.parse(text) as unknown;
}

/** Writes `value` at `path` unless the file exists; false when another process wrote it first. */
export function createPrivateJson(path: string, value: unknown): boolean {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIR });
  const tmp = writeTemp(path, value);
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  } finally {
    unlinkSync(tmp);
  }
}

/** Replaces the file at `path` with `value`. */
export function replacePrivateJson(path: string, value: unknown): void {
  renameSync(writeTemp(path, value), path);
}

function writeTemp(path: string, value: unknown): string {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2), { mode: PRIVATE_FILE });
  chmodSync(tmp, PRIVATE_FILE); // whatever the umask
  return tmp;
}
