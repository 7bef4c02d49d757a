/**
 * Owner-only files and folders, whatever the umask: the store holds webhook signing secrets and
 * the outbox live sign-in links, so nothing the service writes is readable by another local user.
 * A `scores` process also sets its umask to PRIVATE_UMASK (src/app/cli/main.ts); these helpers
 * make the modes explicit where a file is created, for a process embedding the service too.
 */
import { chmodSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** No bit for the group or others on what is created. */
export const PRIVATE_UMASK = 0o077;
export const PRIVATE_FILE = 0o600;
export const PRIVATE_DIR = 0o700;

/**
 * Takes the group's and others' bits off `path` (a file SQLite opened, whose mode followed the
 * umask: SQLite gives its WAL and shared-memory files the database file's mode). Answers whether
 * the mode changed.
 */
export function narrow(path: string): boolean {
  const mode = lstatSync(path).mode & 0o7777;
  if ((mode & PRIVATE_UMASK) === 0) return false;
  chmodSync(path, mode & ~PRIVATE_UMASK);
  return true;
}

/**
 * Narrows `root` and everything under it; answers the paths it changed. A start on a data
 * directory written before this release, or copied with wider modes, ends owner-only. Left alone:
 * symbolic links (their targets are not the service's), what another user owns, and a shared
 * folder with the sticky bit (a data directory set to /tmp must not close /tmp).
 */
export function narrowTree(root: string): string[] {
  const changed: string[] = [];
  const uid = process.getuid?.();
  const walk = (path: string) => {
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink() || (uid !== undefined && stat.uid !== uid) || (stat.mode & 0o1000) !== 0) return;
    if (narrow(path)) changed.push(path);
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(root);
  return changed;
}
