import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../../src/core/paths.js';

type Entry = { seq: number; kind: string; prev_hash: string; hash: string; data: Record<string, unknown> };
type Head = { account_id: string; seq: number; hash: string; at: string; key_id: string; signature: string };
type Key = { key_id: string; public_key: string };

export interface DocsLedgerVerifier {
  verify(entries: Entry[], start?: string): string;
  verifySigned(entries: Entry[], head: Head, keys: Key[], start?: string): string;
}

/**
 * The verifier script of docs/ledger.md ("The hash chain"), exactly as a customer copies it: the
 * first ```js block of the page, run as a module. A change of the recipe or a slip in the page
 * fails the tests that use it.
 */
export async function loadDocsLedgerVerifier(): Promise<DocsLedgerVerifier> {
  const page = readFileSync(join(projectRoot(), 'docs/ledger.md'), 'utf8');
  const script = /^```js\n([\s\S]*?)^```$/m.exec(page)?.[1];
  if (!script) throw new Error('docs/ledger.md has no ```js block');
  const dir = mkdtempSync(join(tmpdir(), 'scores-docs-verifier-'));
  try {
    const file = join(dir, 'verify.mjs');
    writeFileSync(file, `${script}\nexport { verify, verifySigned };\n`);
    return (await import(pathToFileURL(file).href)) as DocsLedgerVerifier;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
