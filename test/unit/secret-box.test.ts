import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AesGcmSecretBox, dataKeyId, SecretUnreadableError, type DataKey } from '../../src/core/aes-gcm-secret-box.js';
import { DATA_KEY_FILE, openDataKeyring, parseDataKey, parseRetiredDataKeys, rotateDataKey } from '../../infra/files/data-keyring.js';
import { tempDir } from '../support/server.js';

const newKey = (): DataKey => {
  const key = randomBytes(32);
  return { id: dataKeyId(key), key };
};
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const NOW = new Date('2026-11-29T12:00:00Z');

async function refusal(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a refusal');
}

describe('Secrets sealed at rest (AES-256-GCM under the data keys)', () => {
  it('seals to a string that names its key and holds no trace of the secret, and opens it back', async () => {
    const box = new AesGcmSecretBox(newKey());
    const sealed = await box.seal(SECRET, 'webhook-secret:acct_a');
    expect(sealed).to.match(new RegExp(`^sealed:v1:${box.keyId}:[A-Za-z0-9_-]+$`));
    expect(sealed).not.to.include('whsec_').and.not.to.include(SECRET.slice(6, 20));
    expect(await box.seal(SECRET, 'webhook-secret:acct_a'), 'a fresh IV each time').not.to.equal(sealed);
    expect(await box.open(sealed, 'webhook-secret:acct_a')).to.equal(SECRET);
  });

  it('does not open for another context, nor when altered', async () => {
    const box = new AesGcmSecretBox(newKey());
    const sealed = await box.seal(SECRET, 'webhook-secret:acct_a');
    expect(await refusal(box.open(sealed, 'webhook-secret:acct_b'))).to.be.instanceOf(SecretUnreadableError);
    const at = sealed.length - 10;
    const flipped = sealed.slice(0, at) + (sealed[at] === 'A' ? 'B' : 'A') + sealed.slice(at + 1);
    expect(await refusal(box.open(flipped, 'webhook-secret:acct_a'))).to.be.instanceOf(SecretUnreadableError);
  });

  it('passes a secret written in clear before sealing existed through as it is', async () => {
    expect(await new AesGcmSecretBox(newKey()).open(SECRET, 'webhook-secret:acct_a')).to.equal(SECRET);
  });

  it('opens with a retired key what it sealed, and names the key it lacks', async () => {
    const [old, next] = [newKey(), newKey()];
    const sealed = await new AesGcmSecretBox(old).seal(SECRET, 'c');
    expect(await new AesGcmSecretBox(next, [old]).open(sealed, 'c')).to.equal(SECRET);
    const missing = await refusal(new AesGcmSecretBox(next).open(sealed, 'c'));
    expect(missing).to.be.instanceOf(SecretUnreadableError);
    expect(missing.message).to.include(old.id).and.not.to.include(old.key.toString('base64'));
  });
});

describe('The data keyring (DATA_ENCRYPTION_KEY, or the data directory\'s key file)', () => {
  let dir: string;
  beforeEach(() => (dir = tempDir('scores-data-keys-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the data directory\'s key file owner-only on first start, and reads the same key after', async () => {
    const first = openDataKeyring({ dataDir: dir, key: null, retired: [], now: NOW });
    expect(first.source).to.equal('file');
    expect(statSync(join(dir, DATA_KEY_FILE)).mode & 0o777).to.equal(0o600);
    const sealed = await first.box.seal(SECRET, 'c');
    const again = openDataKeyring({ dataDir: dir, key: null, retired: [], now: NOW });
    expect(again.box.keyId).to.equal(first.box.keyId);
    expect(await again.box.open(sealed, 'c')).to.equal(SECRET);
  });

  it('rotates: new secrets are sealed under the new key, the old ones still open', async () => {
    const before = openDataKeyring({ dataDir: dir, key: null, retired: [], now: NOW }).box;
    const old = await before.seal(SECRET, 'c');
    const rotated = rotateDataKey(dir, NOW);
    expect(rotated.retired).to.equal(before.keyId);
    const after = openDataKeyring({ dataDir: dir, key: null, retired: [], now: NOW }).box;
    expect(after.keyId).to.equal(rotated.current).and.not.to.equal(before.keyId);
    expect(await after.seal(SECRET, 'c')).to.match(new RegExp(`^sealed:v1:${rotated.current}:`));
    expect(await after.open(old, 'c')).to.equal(SECRET);
    expect(statSync(join(dir, DATA_KEY_FILE)).mode & 0o777).to.equal(0o600);
    expect(JSON.parse(readFileSync(join(dir, DATA_KEY_FILE), 'utf8')).retired).to.have.length(1);
  });

  it('prefers the environment\'s key, and opens with the retired keys it is given', async () => {
    const [old, next] = [newKey(), newKey()];
    const sealed = await new AesGcmSecretBox(old).seal(SECRET, 'c');
    const ring = openDataKeyring({ dataDir: dir, key: next, retired: [old], now: NOW });
    expect(ring.source).to.equal('environment');
    expect(ring.box.keyId).to.equal(next.id);
    expect(await ring.box.open(sealed, 'c')).to.equal(SECRET);
  });

  it('parses a key as base64 of 32 bytes, and refuses anything else without repeating it', () => {
    const text = randomBytes(32).toString('base64');
    expect(parseDataKey(text).key.toString('base64')).to.equal(text);
    for (const bad of [randomBytes(16).toString('base64'), 'not a key at all', `${text}!`]) {
      const err = (() => {
        try {
          parseDataKey(bad);
        } catch (e) {
          return e as Error;
        }
        throw new Error(`accepted ${bad}`);
      })();
      expect(err.message).to.include('32 random bytes').and.not.to.include(bad);
    }
    const two = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
    expect(parseRetiredDataKeys(two.join(', ')).map((k) => k.key.toString('base64'))).to.deep.equal(two);
    expect(() => parseRetiredDataKeys(`${two[0]},nope`)).to.throw(/entry 1/);
  });
});
