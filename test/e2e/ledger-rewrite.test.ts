import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { verifySignedHead } from '../../src/domain/ledger/ledger-head.js';
import { loadDocsLedgerVerifier, type DocsLedgerVerifier } from '../support/docs-ledger-verifier.js';
import { runCli } from '../support/processes.js';
import { rewriteLedger } from '../support/ledger-rewrite.js';
import { getJson, startTestServer, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-03-15T12:00:00Z';

type Entry = { seq: number; kind: string; at: string; prev_hash: string; hash: string; data: Record<string, unknown> };

describe('A ledger rewritten with write access to the store, against a signed head kept before', function () {
  this.timeout(180_000);
  const dir = tempDir('scores-rewrite-');
  const signingKey = generateKeyPairSync('ed25519').privateKey;
  const signingPem = signingKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  // The attacker's tool (test/support/ledger-rewrite.ts) rewrites the log's JSON form of a debit; a
  // compact debit record (docs/ledger.md, Storage of a debit) is as rewritable, and caught the same way.
  const env = testEnv(dir, NOW, { LEDGER_SIGNING_KEY: signingPem, SCORES_LOG_DEBITS: 'events' });
  const logs: string[] = [];
  let docs: DocsLedgerVerifier;
  let account = '';
  /** The `/v1/usage/ledger` page the customer kept, with its signed head. */
  let kept: { signed_head: Parameters<DocsLedgerVerifier['verifySigned']>[1] & { statement: string; alg: string }; entries: Entry[] };
  let keys: { key_id: string; public_key: string; alg: 'Ed25519'; created_at: string | null; retired_at: string | null }[];
  let packSeq = -1;

  before(async () => {
    docs = await loadDocsLedgerVerifier();
    const log = pino({ level: 'trace' }, { write: (line: string) => void logs.push(line) });
    const server = await startTestServer({ now: NOW, dir, env: { LEDGER_SIGNING_KEY: signingPem, LOG_LEVEL: 'trace', SCORES_LOG_DEBITS: 'events' }, log });
    try {
      const k = await createAccountWithKey(server.services, { tier: 'hobbyist' });
      account = k.account_id;
      await server.services.ledger.execute(account, { type: 'PurchasePack', data: { pack_id: 'pack-10k', credits: 10_000 } });
      for (let i = 0; i < 3; i++) expect((await getJson(`${server.url}/v1/scores/AAPL`, k.key)).status).to.equal(200);
      const page = await getJson(`${server.url}/v1/usage/ledger`, k.key);
      expect(page.status).to.equal(200);
      kept = page.body as typeof kept;
      const wellKnown = await getJson(`${server.url}/.well-known/scores-ledger-keys.json`);
      expect(wellKnown.status).to.equal(200);
      expect(wellKnown.headers.get('cache-control')).to.equal('public, max-age=3600');
      keys = wellKnown.body['keys'] as typeof keys;
      // More calls after the head was kept: the ledger goes on past it.
      for (let i = 0; i < 2; i++) await getJson(`${server.url}/v1/scores/AAPL`, k.key);
    } finally {
      await server.stop();
    }
    packSeq = kept.entries.find((e) => e.kind === 'PackPurchased')!.seq;
    rewriteLedger(join(dir, 'scores.sqlite'), account, (type, data) => {
      if (type !== 'PackPurchased' || data['credits'] !== 10_000) return false;
      data['credits'] = 1_000_000;
      return true;
    });
    // ...and rebuilds the read models from the rewritten log, so that they agree with it.
    const s = await openServices(loadConfig(env));
    await s.runner.replay();
    await s.close();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the kept page carries a head signed with the published key, and the docs verifier accepts both', () => {
    const head = kept.signed_head;
    expect(head).to.include({ statement: 'scores-ledger-head:v1', alg: 'Ed25519', account_id: account, seq: kept.entries[0]!.seq, hash: kept.entries[0]!.hash });
    expect(keys.map((k) => k.key_id)).to.deep.equal([head.key_id]);
    expect(verifySignedHead(head, keys)).to.deep.include({ ok: true });
    const oldestFirst = [...kept.entries].reverse();
    expect(docs.verify(oldestFirst)).to.equal('ok');
    expect(docs.verifySigned(oldestFirst, head, keys)).to.equal('ok');
    expect(packSeq).to.be.greaterThan(0).and.lessThan(head.seq);
  });

  it('plain `scores audit` passes: the hashes alone hold, the pack now says 1,000,000 credits', async () => {
    const r = await runCli(['audit', '--account', account, '--json'], env);
    expect(r.code, r.stderr).to.equal(0);
    const report = JSON.parse(r.stdout) as { ok: boolean; chain: unknown };
    expect(report).to.include({ ok: true, chain: null });
    const exported = JSON.parse((await runCli(['ledger', 'export', '--account', account, '--json'], env)).stdout) as { lines: Entry[] };
    expect(exported.lines[packSeq]!.data).to.include({ credits: 1_000_000 });
    expect(docs.verify(exported.lines)).to.equal('ok');
  });

  it('`scores audit --against` the kept page names the rewritten pack line as the first that differs (exit 3)', async () => {
    const file = join(dir, 'kept-ledger-page.json');
    writeFileSync(file, JSON.stringify(kept));
    const json = await runCli(['audit', '--against', file, '--json'], env);
    expect(json.code, json.stderr).to.equal(3);
    const report = JSON.parse(json.stdout) as { ok: boolean; signature: string; first_differing: Record<string, unknown> };
    expect(report).to.include({ ok: false, signature: 'valid' });
    expect(report.first_differing).to.include({ seq: packSeq, kind: 'PackPurchased', exact: true, kept_hash: kept.entries.find((e) => e.seq === packSeq)!.hash });
    const text = await runCli(['audit', '--account', account, '--against', file], env);
    expect(text.code).to.equal(3);
    expect(text.stdout).to.include(`the ledger was rewritten. First rewritten line: ${packSeq} (PackPurchased at `);
  });

  it('`scores audit --against` the signed head alone shows the rewrite, up to the head', async () => {
    const file = join(dir, 'kept-head.json');
    writeFileSync(file, JSON.stringify(kept.signed_head));
    const r = await runCli(['audit', '--against', file, '--json'], env);
    expect(r.code, r.stderr).to.equal(3);
    const report = JSON.parse(r.stdout) as { first_differing: Record<string, unknown> };
    expect(report.first_differing).to.include({ seq: kept.signed_head.seq, exact: false });
  });

  it('the docs verifier, given the kept signed head, refuses the rewritten ledger', async () => {
    const exported = JSON.parse((await runCli(['ledger', 'export', '--account', account, '--json'], env)).stdout) as { lines: Entry[] };
    expect(docs.verifySigned(exported.lines, kept.signed_head, keys)).to.equal(`rewritten: seq ${kept.signed_head.seq} no longer has the signed hash`);
  });

  it('refuses a head that the service did not sign', async () => {
    const forged = { ...kept.signed_head, hash: 'f'.repeat(64) };
    const file = join(dir, 'forged-head.json');
    writeFileSync(file, JSON.stringify(forged));
    const r = await runCli(['audit', '--against', file, '--json'], env);
    expect(r.code).to.equal(3);
    expect(JSON.parse(r.stdout)).to.include({ ok: false, signature: 'invalid' });
    expect(docs.verifySigned([...kept.entries].reverse(), forged, keys)).to.equal('signature invalid');
  });

  it('never writes the signing key to the log', () => {
    expect(logs.length).to.be.greaterThan(5); // the trace log of the whole run above
    const text = logs.join('');
    const der = signingKey.export({ format: 'der', type: 'pkcs8' });
    const secrets = [
      signingPem.split('\n')[1]!,
      der.toString('base64'),
      der.subarray(-32).toString('base64'),
      der.subarray(-32).toString('hex'),
      (signingKey.export({ format: 'jwk' }) as { d: string }).d,
    ];
    for (const secret of secrets) expect(text.includes(secret), `key material in the log: ${secret.slice(0, 6)}…`).to.equal(false);
  });
});
