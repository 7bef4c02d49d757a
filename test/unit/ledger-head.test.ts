import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { headSigner, headStatement, verifySignedHead, type LedgerHead } from '../../src/domain/ledger/ledger-head.js';
import { LEDGER_KEY_FILE, openLedgerKeyring, parseRetiredKeys, parseSigningKey, rotateLedgerKey } from '../../infra/files/ledger-keyring.js';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { tempDir } from '../support/server.js';

const HEAD: LedgerHead = { account_id: 'acct_1', seq: 41, hash: 'ab'.repeat(32), at: '2026-11-27T12:00:00.000Z' };
const newKey = () => generateKeyPairSync('ed25519').privateKey;
const pem = (key = newKey()) => key.export({ format: 'pem', type: 'pkcs8' }).toString();

describe('Signed ledger heads', () => {
  const dirs: string[] = [];
  const dir = () => {
    const d = tempDir('scores-ledger-keys-');
    dirs.push(d);
    return d;
  };
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const fileKeyring = (dataDir: string, now = '2026-11-01T00:00:00Z') =>
    openLedgerKeyring({ dataDir, signingKey: null, retired: [], sharedLog: false, now: new Date(now) });

  describe('signing and verifying', () => {
    it('signs the documented statement, and the signature verifies with the published key', () => {
      const keyring = fileKeyring(dir());
      const signed = keyring.signer!.sign(HEAD);
      expect(signed).to.include({ ...HEAD, statement: 'scores-ledger-head:v1', alg: 'Ed25519', key_id: keyring.signer!.keyId });
      expect(headStatement(signed)).to.equal(`scores-ledger-head:v1\nacct_1\n41\n${'ab'.repeat(32)}\n2026-11-27T12:00:00.000Z\n${signed.key_id}`);
      expect(verifySignedHead(signed, keyring.keys)).to.deep.include({ ok: true });
    });

    it('rejects a head whose seq, hash, account, instant or key id was changed after signing', () => {
      const keyring = fileKeyring(dir());
      const signed = keyring.signer!.sign(HEAD);
      for (const change of [{ seq: 40 }, { hash: 'cd'.repeat(32) }, { account_id: 'acct_2' }, { at: '2026-11-28T12:00:00.000Z' }, { key_id: 'lk_0000000000000000' }]) {
        const check = verifySignedHead({ ...signed, ...change }, keyring.keys);
        expect(check.ok, JSON.stringify(change)).to.equal(false);
      }
    });

    it("rejects a head signed by another key, under the service's key id or its own", () => {
      const service = fileKeyring(dir());
      const intruder = headSigner(newKey());
      const forged = intruder.sign(HEAD);
      expect(verifySignedHead(forged, service.keys)).to.deep.include({ ok: false });
      expect(verifySignedHead({ ...forged, key_id: service.signer!.keyId }, service.keys)).to.deep.equal({
        ok: false,
        reason: `the signature is not key ${service.signer!.keyId}'s over this head`,
      });
    });
  });

  describe('the key', () => {
    it('is generated on first start into the data directory, readable by its owner only, and kept', () => {
      const d = dir();
      const first = fileKeyring(d);
      expect(first.source).to.equal('file');
      expect(statSync(join(d, LEDGER_KEY_FILE)).mode & 0o777).to.equal(0o600);
      expect(first.keys).to.have.length(1);
      expect(first.keys[0]).to.include({ key_id: first.signer!.keyId, alg: 'Ed25519', created_at: '2026-11-01T00:00:00.000Z', retired_at: null });
      chmodSync(join(d, LEDGER_KEY_FILE), 0o644); // a copy of the directory that widened it
      expect(fileKeyring(d, '2026-12-01T00:00:00Z').signer!.keyId).to.equal(first.signer!.keyId);
      expect(statSync(join(d, LEDGER_KEY_FILE)).mode & 0o777).to.equal(0o600);
    });

    it('keeps heads signed before a rotation valid: the old key stays listed, retired', () => {
      const d = dir();
      const before = fileKeyring(d);
      const old = before.signer!.sign(HEAD);
      const oldPrivate = (JSON.parse(readFileSync(join(d, LEDGER_KEY_FILE), 'utf8')) as { current: { private_key: string } }).current.private_key;
      const rotated = rotateLedgerKey(d, new Date('2026-11-28T00:00:00Z'));
      const after = fileKeyring(d);
      expect(after.signer!.keyId).to.equal(rotated.current.key_id).and.not.equal(before.signer!.keyId);
      expect(after.keys.map((k) => [k.key_id, k.retired_at])).to.deep.equal([
        [rotated.current.key_id, null],
        [before.signer!.keyId, '2026-11-28T00:00:00.000Z'],
      ]);
      expect(verifySignedHead(old, after.keys)).to.deep.include({ ok: true });
      expect(verifySignedHead(after.signer!.sign(HEAD), after.keys)).to.deep.include({ ok: true });
      // A retired key signs nothing after its retirement: a head it signed later is refused.
      const late = headSigner(parseSigningKey(oldPrivate)).sign({ ...HEAD, at: '2026-11-29T00:00:00.000Z' });
      expect(verifySignedHead(late, after.keys)).to.deep.equal({ ok: false, reason: `key ${before.signer!.keyId} was retired at 2026-11-28T00:00:00.000Z, before 2026-11-29T00:00:00.000Z` });
      expect(statSync(join(d, LEDGER_KEY_FILE)).mode & 0o777).to.equal(0o600);
    });

    it('comes from LEDGER_SIGNING_KEY as PKCS8 PEM or base64, with retired keys from LEDGER_RETIRED_KEYS', () => {
      const key = pem();
      const fromPem = parseSigningKey(key);
      expect(headSigner(parseSigningKey(key.replace(/\n/g, '\\n'))).keyId).to.equal(headSigner(fromPem).keyId);
      expect(headSigner(parseSigningKey(Buffer.from(key).toString('base64'))).keyId).to.equal(headSigner(fromPem).keyId);
      const der = fromPem.export({ format: 'der', type: 'pkcs8' }).toString('base64');
      expect(headSigner(parseSigningKey(der)).keyId).to.equal(headSigner(fromPem).keyId);

      const oldRing = fileKeyring(dir());
      const oldHead = oldRing.signer!.sign(HEAD);
      const retired = parseRetiredKeys(JSON.stringify([{ ...oldRing.keys[0], retired_at: '2026-11-28T00:00:00Z' }]));
      const d = dir();
      const ring = openLedgerKeyring({ dataDir: d, signingKey: fromPem, retired, sharedLog: true, now: new Date() });
      expect(ring.source).to.equal('environment');
      expect(ring.keys.map((k) => k.key_id)).to.deep.equal([headSigner(fromPem).keyId, oldRing.signer!.keyId]);
      expect(verifySignedHead(oldHead, ring.keys)).to.deep.include({ ok: true });
      expect(verifySignedHead({ ...oldRing.signer!.sign({ ...HEAD, at: '2026-11-29T00:00:00.000Z' }) }, ring.keys)).to.deep.include({ ok: false });
      expect(() => statSync(join(d, LEDGER_KEY_FILE))).to.throw(); // no file beside an environment's key
    });

    it('on a shared log without LEDGER_SIGNING_KEY, signs nothing rather than with a key of its own process', () => {
      const d = dir();
      const ring = openLedgerKeyring({ dataDir: d, signingKey: null, retired: [], sharedLog: true, now: new Date() });
      expect(ring).to.deep.equal({ signer: null, keys: [], source: 'none' });
      expect(() => statSync(join(d, LEDGER_KEY_FILE))).to.throw();
    });

    it('refuses a malformed or non-Ed25519 LEDGER_SIGNING_KEY at start, without repeating it', () => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      for (const value of ['not-a-key-zzz', rsa]) {
        let message = '';
        try {
          loadConfig({ LEDGER_SIGNING_KEY: value });
        } catch (err) {
          expect(err).to.be.instanceOf(ConfigError);
          message = (err as Error).message;
        }
        expect(message).to.match(/LEDGER_SIGNING_KEY: must be an Ed25519 private key/);
        expect(message).to.not.include(value.slice(0, 40));
        expect(message).to.not.include('MII');
      }
    });
  });
});
