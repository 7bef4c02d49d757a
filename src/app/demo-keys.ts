import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { narrow, PRIVATE_DIR, PRIVATE_FILE } from '../core/private-files.js';
import type { DemoAccount } from '../../commands/manage-keys/keys.handler.js';
import { hashApiKey } from '../domain/accounts/api-keys.js';

/** A demo account's key in clear, as `<SCORES_DATA_DIR>/demo-keys.json` keeps it. */
export interface DemoKey {
  tier: string;
  account_id: string;
  key_id: string;
  key: string;
}

export const DEMO_KEY_FILE = 'demo-keys.json';

/** A demo account whose key cannot be shown (the file is gone, or the key was rotated or revoked). */
export interface UnknownDemoKey {
  tier: string;
  account_id: string;
  key_ids: string[];
}

/**
 * The demo keys kept in `<dataDir>/demo-keys.json` (empty without the file). The demo accounts get
 * random keys on their first start and the store keeps only their hashes, so this file, readable
 * by its owner only, is the one place they can be shown from on later starts.
 */
export function readDemoKeys(dataDir: string): DemoKey[] {
  const file = join(dataDir, DEMO_KEY_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  // A copy of the directory may have widened its mode: keys are for its owner only.
  try {
    narrow(file);
  } catch {
    // Not this user's file: its owner keeps it.
  }
  const keys = (JSON.parse(text) as { keys?: unknown }).keys;
  return (Array.isArray(keys) ? (keys as Partial<DemoKey>[]) : []).filter((k): k is DemoKey => typeof k?.key === 'string' && typeof k.tier === 'string');
}

/**
 * Writes the keys of the demo accounts created now into the key file (mode 0600, replaced
 * atomically), and tells which demo keys can be shown: those of the file that are still an
 * active key of their account. A key whose file was lost cannot be shown again.
 */
export function keepDemoKeys(dataDir: string, accounts: DemoAccount[]): { file: string; shown: DemoKey[]; unknown: UnknownDemoKey[] } {
  const file = join(dataDir, DEMO_KEY_FILE);
  let kept = readDemoKeys(dataDir);
  const created = accounts.flatMap(({ tier, account_id, key, active }) => {
    const issued = key ? active.find((k) => k.key_hash === hashApiKey(key)) : undefined;
    return key && issued ? [{ tier, account_id, key_id: issued.key_id, key }] : [];
  });
  if (created.length) {
    kept = [...kept.filter((k) => !created.some((c) => c.tier === k.tier)), ...created];
    mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
    const partial = `${file}.${process.pid}.partial`;
    const note = 'The demo accounts\' API keys, random, created on their first start; the store keeps only their hashes. Keep this file private.';
    writeFileSync(partial, `${JSON.stringify({ note, keys: kept }, null, 2)}\n`, { mode: PRIVATE_FILE });
    chmodSync(partial, PRIVATE_FILE);
    renameSync(partial, file);
  }
  const shown: DemoKey[] = [];
  const unknown: UnknownDemoKey[] = [];
  for (const a of accounts) {
    const k = kept.find((x) => x.tier === a.tier && x.account_id === a.account_id && a.active.some((act) => act.key_hash === hashApiKey(x.key)));
    if (k) shown.push(k);
    else unknown.push({ tier: a.tier, account_id: a.account_id, key_ids: a.active.map((act) => act.key_id) });
  }
  return { file, shown, unknown };
}
