import { expect } from 'chai';
import { accountDecider, type AccountCommand } from '../../src/domain/accounts/account.decider.js';
import type { AccountState } from '../../src/domain/accounts/account.state.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT, MAX_KEY_NAME_LENGTH } from '../../src/domain/accounts/api-keys.js';
import type { AccountEvent } from '../../src/domain/accounts/account.events.js';
import { deciderSpec } from '../support/decider-spec.js';

const spec = deciderSpec<AccountState, AccountCommand, AccountEvent>(accountDecider);

const T0 = '2024-01-01T00:00:00.000Z';
const NOW = new Date('2024-01-01T06:00:00.000Z');
const AT = NOW.toISOString();
const DAY_LATER = '2024-01-02T00:00:00.000Z';

const material = (id: string) => ({ key_id: id, key_hash: `hash-${id}`, prefix: `sk_live_${id}` });
const created: AccountEvent = { type: 'AccountCreated', data: { account_id: 'a1', email: null, at: T0 } };
const issued = (id: string): AccountEvent => ({ type: 'ApiKeyIssued', data: { ...material(id), at: T0 } });
const rotated = (id: string, by: string, graceUntil = DAY_LATER): AccountEvent => ({ type: 'ApiKeyRotated', data: { key_id: id, replaced_by: by, grace_until: graceUntil, at: T0 } });
const revoked = (id: string): AccountEvent => ({ type: 'ApiKeyRevoked', data: { key_id: id, at: T0 } });
/** Keys k1…kn issued on one account. */
const keys = (n: number) => Array.from({ length: n }, (_, i) => issued(`k${i + 1}`));

describe('The account decider', () => {
  describe('caps the active keys of an account', () => {
    it(`issues keys up to ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active ones`, () => {
      spec
        .given([created, ...keys(MAX_ACTIVE_KEYS_PER_ACCOUNT - 1)])
        .when({ type: 'IssueKey', key: material('new') }, NOW)
        .then([{ type: 'ApiKeyIssued', data: { ...material('new'), name: `Key ${MAX_ACTIVE_KEYS_PER_ACCOUNT}`, at: AT } }]);
    });

    it(`refuses the ${MAX_ACTIVE_KEYS_PER_ACCOUNT + 1}th active key with limit_exceeded, naming the maximum`, () => {
      const err = spec.given([created, ...keys(MAX_ACTIVE_KEYS_PER_ACCOUNT)]).when({ type: 'IssueKey', key: material('new') }, NOW).thenThrows('limit_exceeded');
      expect(err.status).to.equal(422);
      expect(err.detail).to.match(new RegExp(`at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys.*revoke one`));
      expect(err.extensions).to.deep.equal({ maximum: MAX_ACTIVE_KEYS_PER_ACCOUNT });
    });

    it('counts only active keys: a revoked key frees a place, a rotation at the cap replaces a key and is allowed', () => {
      const full = [created, ...keys(MAX_ACTIVE_KEYS_PER_ACCOUNT)];
      spec
        .given([...full, revoked('k3')])
        .when({ type: 'IssueKey', key: material('new') }, NOW)
        .then([{ type: 'ApiKeyIssued', data: { ...material('new'), name: `Key ${MAX_ACTIVE_KEYS_PER_ACCOUNT + 1}`, at: AT } }]);
      spec
        .given(full)
        .when({ type: 'RotateKey', key_id: 'k1', grace_seconds: 3600, key: material('k1b') }, NOW)
        .then([
          { type: 'ApiKeyIssued', data: { ...material('k1b'), name: 'Key 1', at: AT } },
          { type: 'ApiKeyRotated', data: { key_id: 'k1', replaced_by: 'k1b', grace_until: '2024-01-01T07:00:00.000Z', at: AT } },
        ]);
      // …and after it the account is still at its cap: a rotated key in grace does not count, its successor does.
      spec
        .given([...full, issued('k1b'), rotated('k1', 'k1b')])
        .when({ type: 'IssueKey', key: material('new') }, NOW)
        .thenThrows('limit_exceeded');
    });
  });

  describe('lets revocation win', () => {
    it('revokes a rotated key in its grace period', () => {
      spec
        .given([created, issued('k1'), issued('k2'), rotated('k1', 'k2')])
        .when({ type: 'RevokeKey', key_id: 'k1' }, NOW)
        .then([{ type: 'ApiKeyRevoked', data: { key_id: 'k1', at: AT } }]);
    });

    it("ends the predecessor's grace when its successor is revoked", () => {
      spec
        .given([created, issued('k1'), issued('k2'), rotated('k1', 'k2')])
        .when({ type: 'RevokeKey', key_id: 'k2' }, NOW)
        .then([
          { type: 'ApiKeyRevoked', data: { key_id: 'k2', at: AT } },
          { type: 'ApiKeyRevoked', data: { key_id: 'k1', at: AT, grace_ended_by: 'k2' } },
        ]);
    });

    it("ends the predecessor's grace when its successor is rotated in turn", () => {
      spec
        .given([created, issued('k1'), issued('k2'), rotated('k1', 'k2')])
        .when({ type: 'RotateKey', key_id: 'k2', grace_seconds: 86_400, key: material('k3') }, NOW)
        .then([
          { type: 'ApiKeyIssued', data: { ...material('k3'), name: 'Key 2', at: AT } },
          { type: 'ApiKeyRotated', data: { key_id: 'k2', replaced_by: 'k3', grace_until: '2024-01-02T06:00:00.000Z', at: AT } },
          { type: 'ApiKeyRevoked', data: { key_id: 'k1', at: AT, grace_ended_by: 'k2' } },
        ]);
    });

    it('ends the grace of every key in grace up the chain of rotations, and leaves alone keys whose grace is over or that were revoked', () => {
      spec
        .given([
          created,
          ...keys(5),
          // k1 → k2 → k3 in grace (a history from before a rotation ended the grace before it);
          rotated('k1', 'k2'),
          rotated('k2', 'k3'),
          // k4's grace ended before now; k5 was revoked during its grace.
          rotated('k4', 'k1', '2024-01-01T05:00:00.000Z'),
          issued('k6'),
          rotated('k5', 'k6'),
          revoked('k5'),
        ])
        .when({ type: 'RevokeKey', key_id: 'k3' }, NOW)
        .then([
          { type: 'ApiKeyRevoked', data: { key_id: 'k3', at: AT } },
          { type: 'ApiKeyRevoked', data: { key_id: 'k2', at: AT, grace_ended_by: 'k3' } },
          { type: 'ApiKeyRevoked', data: { key_id: 'k1', at: AT, grace_ended_by: 'k3' } },
        ]);
    });

    it("touches no other key's grace: an unrelated rotation keeps its grace", () => {
      spec
        .given([created, issued('k1'), issued('k2'), issued('k3'), rotated('k1', 'k2')])
        .when({ type: 'RevokeKey', key_id: 'k3' }, NOW)
        .then([{ type: 'ApiKeyRevoked', data: { key_id: 'k3', at: AT } }]);
    });

    it('revokes a key once: a revoked key again is no change', () => {
      spec.given([created, issued('k1'), revoked('k1')]).when({ type: 'RevokeKey', key_id: 'k1' }, NOW).then([]);
    });
  });

  describe('names keys', () => {
    const named = (id: string, name: string): AccountEvent => ({ type: 'ApiKeyIssued', data: { ...material(id), name, at: T0 } });

    it('opens an account with its first key named Key 1, or as given', () => {
      const open = { type: 'CreateAccount', account_id: 'a1', email: null } as const;
      spec.given([]).when({ ...open, key: material('k1') }, NOW).then([
        { type: 'AccountCreated', data: { account_id: 'a1', email: null, at: AT } },
        { type: 'ApiKeyIssued', data: { ...material('k1'), name: 'Key 1', at: AT } },
      ]);
      spec.given([]).when({ ...open, key: { ...material('k1'), name: 'Laptop' } }, NOW).then([
        { type: 'AccountCreated', data: { account_id: 'a1', email: null, at: AT } },
        { type: 'ApiKeyIssued', data: { ...material('k1'), name: 'Laptop', at: AT } },
      ]);
    });

    it('stores the name given, trimmed and with runs of spaces made one; a blank name is the default for its place', () => {
      spec.given([created, named('k1', 'Laptop')]).when({ type: 'IssueKey', key: { ...material('k2'), name: '  CI   runner ' } }, NOW).then([
        { type: 'ApiKeyIssued', data: { ...material('k2'), name: 'CI runner', at: AT } },
      ]);
      spec.given([created, named('k1', 'Laptop'), revoked('k1')]).when({ type: 'IssueKey', key: { ...material('k2'), name: '   ' } }, NOW).then([
        { type: 'ApiKeyIssued', data: { ...material('k2'), name: 'Key 2', at: AT } },
      ]);
    });

    it('reads keys issued before names as Key <n>, by their place on the account', () => {
      const state = [created, issued('k1'), named('k2', 'Laptop'), issued('k3')].reduce(accountDecider.evolve, accountDecider.initialState());
      expect([...state.keys.values()].map((k) => k.name)).to.deep.equal(['Key 1', 'Laptop', 'Key 3']);
    });

    it("gives a rotation's new key the name of the key it replaces, unless another is given", () => {
      spec.given([created, named('k1', 'Laptop')]).when({ type: 'RotateKey', key_id: 'k1', grace_seconds: 0, key: material('k2') }, NOW).then([
        { type: 'ApiKeyIssued', data: { ...material('k2'), name: 'Laptop', at: AT } },
        { type: 'ApiKeyRotated', data: { key_id: 'k1', replaced_by: 'k2', grace_until: AT, at: AT } },
      ]);
      spec.given([created, named('k1', 'Laptop')]).when({ type: 'RotateKey', key_id: 'k1', grace_seconds: 0, key: { ...material('k2'), name: 'Desktop' } }, NOW).then([
        { type: 'ApiKeyIssued', data: { ...material('k2'), name: 'Desktop', at: AT } },
        { type: 'ApiKeyRotated', data: { key_id: 'k1', replaced_by: 'k2', grace_until: AT, at: AT } },
      ]);
    });

    it(`refuses a name of more than ${MAX_KEY_NAME_LENGTH} characters or with control characters (400), issuing nothing`, () => {
      spec.given([created]).when({ type: 'IssueKey', key: { ...material('k1'), name: 'x'.repeat(MAX_KEY_NAME_LENGTH) } }, NOW).then([
        { type: 'ApiKeyIssued', data: { ...material('k1'), name: 'x'.repeat(MAX_KEY_NAME_LENGTH), at: AT } },
      ]);
      const err = spec.given([created]).when({ type: 'IssueKey', key: { ...material('k1'), name: 'x'.repeat(MAX_KEY_NAME_LENGTH + 1) } }, NOW).thenThrows('bad_request');
      expect(err.detail).to.include(`at most ${MAX_KEY_NAME_LENGTH} characters`);
      spec.given([created]).when({ type: 'IssueKey', key: { ...material('k1'), name: 'a\u0000b' } }, NOW).thenThrows('bad_request');
    });
  });

  describe('forgets an account', () => {
    it('revokes every key not revoked yet, a rotated key in its grace included, and records AccountForgotten last', () => {
      spec
        .given([created, ...keys(3), rotated('k1', 'k3'), revoked('k2')])
        .when({ type: 'ForgetAccount' }, NOW)
        .then([
          { type: 'ApiKeyRevoked', data: { key_id: 'k1', at: AT } },
          { type: 'ApiKeyRevoked', data: { key_id: 'k3', at: AT } },
          { type: 'AccountForgotten', data: { account_id: 'a1', at: AT } },
        ]);
    });

    it('decides nothing the second time (a retried forgetting), and refuses every other command after it', () => {
      const forgotten: AccountEvent = { type: 'AccountForgotten', data: { account_id: 'a1', at: T0 } };
      spec.given([created, issued('k1'), revoked('k1'), forgotten]).when({ type: 'ForgetAccount' }, NOW).then([]);
      for (const command of [{ type: 'IssueKey', key: material('k9') }, { type: 'SetRateLimit', per_second: 5 }] satisfies AccountCommand[]) {
        spec.given([created, issued('k1'), revoked('k1'), forgotten]).when(command, NOW).thenThrows('not_found');
      }
    });

    it('refuses an account that does not exist', () => {
      spec.given([]).when({ type: 'ForgetAccount' }, NOW).thenThrows('not_found');
    });
  });
});
