import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { accountDecider } from '../../src/domain/accounts/account.decider.js';
import { KEY_PREFIX, generateApiKey, hashApiKey, shownPrefix } from '../../src/domain/accounts/api-keys.js';

const { decide: decideAccount, evolve: evolveAccount, initialState: initialAccountState } = accountDecider;

describe('API keys', () => {
  it('carry 256 random bits after a recognisable prefix', () => {
    const key = generateApiKey();
    expect(key.startsWith(KEY_PREFIX)).to.equal(true);
    expect(Buffer.from(key.slice(KEY_PREFIX.length), 'base64url')).to.have.length(32);
    expect(generateApiKey()).to.not.equal(key);
  });

  it('are stored as their SHA-256 only, with a short prefix to tell them apart', () => {
    const key = generateApiKey();
    const [created, issued] = decideAccount(
      initialAccountState(),
      { type: 'CreateAccount', account_id: 'a1', email: null, key: { key_id: 'k1', key_hash: hashApiKey(key), prefix: shownPrefix(key) } },
      new Date('2024-01-01T00:00:00Z'),
    );
    expect(created!.type).to.equal('AccountCreated');
    expect(JSON.stringify([created, issued])).to.not.include(key.slice(KEY_PREFIX.length + 6));
    expect(issued!.data).to.include({ key_hash: createHash('sha256').update(key).digest('hex'), prefix: key.slice(0, KEY_PREFIX.length + 6) });
  });

  describe('When a key is rotated', () => {
    const now = new Date('2024-01-01T00:00:00Z');
    const material = (id: string) => ({ key_id: id, key_hash: id.repeat(8), prefix: 'sk_live_abcdef' });
    const base = [
      ...decideAccount(initialAccountState(), { type: 'CreateAccount', account_id: 'a1', email: null, key: material('k1') }, now),
    ].reduce(evolveAccount, initialAccountState());

    it('issues the new key and keeps the old one until the end of the grace period', () => {
      const out = decideAccount(base, { type: 'RotateKey', key_id: 'k1', grace_seconds: 3600, key: material('k2') }, now);
      expect(out.map((e) => e.type)).to.deep.equal(['ApiKeyIssued', 'ApiKeyRotated']);
      expect(out[1]!.data).to.include({ key_id: 'k1', replaced_by: 'k2', grace_until: '2024-01-01T01:00:00.000Z' });
    });

    it('refuses a negative grace period and a key that is not active', () => {
      expect(() => decideAccount(base, { type: 'RotateKey', key_id: 'k1', grace_seconds: -1, key: material('k2') }, now)).to.throw(/grace/);
      const revoked = decideAccount(base, { type: 'RevokeKey', key_id: 'k1' }, now).reduce(evolveAccount, base);
      expect(() => decideAccount(revoked, { type: 'RotateKey', key_id: 'k1', grace_seconds: 0, key: material('k2') }, now)).to.throw(/revoked/);
      expect(decideAccount(revoked, { type: 'RevokeKey', key_id: 'k1' }, now)).to.deep.equal([]);
    });
  });
});
