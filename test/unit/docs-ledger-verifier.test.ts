import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { headSigner, publicKeyEntry } from '../../src/domain/ledger/ledger-head.js';
import { GENESIS_HASH, sealEvent } from '../../src/domain/ledger/ledger.events.js';
import { loadDocsLedgerVerifier, type DocsLedgerVerifier } from '../support/docs-ledger-verifier.js';

/** Three ledger lines as `/v1/usage/ledger` shows them, oldest first, sealed by the service's own code. */
function ledger(credits = 10_000) {
  const opened = sealEvent('LedgerOpened', { account_id: 'acct_1', tier: 'free', pro: false, allow_overage: false }, '2026-11-01T00:00:00.000Z', GENESIS_HASH);
  const pack = sealEvent('PackPurchased', { pack_id: 'p', credits }, '2026-11-02T00:00:00.000Z', opened.data.hash);
  const overage = sealEvent('OverageSwitched', { allow_overage: false }, '2026-11-03T00:00:00.000Z', pack.data.hash);
  return [opened, pack, overage].map((e, seq) => ({ seq, kind: e.type, prev_hash: e.data.prev_hash, hash: e.data.hash, data: e.data as unknown as Record<string, unknown> }));
}

describe('The verifier script of docs/ledger.md, run as written there', () => {
  let docs: DocsLedgerVerifier;
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const signer = headSigner(privateKey);
  const keys = [publicKeyEntry(publicKey, null, null)];
  before(async () => {
    docs = await loadDocsLedgerVerifier();
  });

  it("accepts the service's chain and a head it signed", () => {
    const lines = ledger();
    const head = signer.sign({ account_id: 'acct_1', seq: 1, hash: lines[1]!.hash, at: '2026-11-02T01:00:00.000Z' });
    expect(docs.verify(lines)).to.equal('ok');
    expect(docs.verifySigned(lines, head, keys)).to.equal('ok');
  });

  it('refuses a rewritten chain that still holds, given a head signed before the rewrite', () => {
    const head = signer.sign({ account_id: 'acct_1', seq: 2, hash: ledger()[2]!.hash, at: '2026-11-03T01:00:00.000Z' });
    const rewritten = ledger(1_000_000);
    expect(docs.verify(rewritten)).to.equal('ok');
    expect(docs.verifySigned(rewritten, head, keys)).to.equal('rewritten: seq 2 no longer has the signed hash');
  });

  it('refuses a head under a wrong key, or with a changed field', () => {
    const lines = ledger();
    const head = signer.sign({ account_id: 'acct_1', seq: 2, hash: lines[2]!.hash, at: '2026-11-03T01:00:00.000Z' });
    const other = headSigner(generateKeyPairSync('ed25519').privateKey).sign(head);
    expect(docs.verifySigned(lines, other, keys)).to.equal('signature invalid');
    expect(docs.verifySigned(lines, { ...other, key_id: head.key_id }, keys)).to.equal('signature invalid');
    expect(docs.verifySigned(lines, { ...head, at: '2026-11-04T00:00:00.000Z' }, keys)).to.equal('signature invalid');
  });
});
