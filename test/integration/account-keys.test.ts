import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AccountKeyVault } from '../../src/core/account-key-vault.js';
import { AesGcmSecretBox, dataKeyId, SecretUnreadableError } from '../../src/core/aes-gcm-secret-box.js';
import { fixedClock } from '../../src/core/clock.js';
import { AccountForgottenError, type AccountKeyStore } from '../../src/core/personal-data.port.js';
import { PostgresAccountKeys } from '../../infra/postgresql/account-keys.js';
import { pgSession } from '../../infra/postgresql/database.js';
import { ACCOUNT_KEYS_FILE, SqliteAccountKeys } from '../../infra/sqlite/account-keys.js';
import { tempDir } from '../support/server.js';

const clock = fixedClock('2024-04-20T12:00:00Z');
const newBox = () => {
  const key = randomBytes(32);
  return new AesGcmSecretBox({ id: dataKeyId(key), key });
};

/** The per-account vault over one key store: what every adapter must do. */
interface Opened {
  store: AccountKeyStore;
  /** The adapter's files, read whole (an embedded store): a destroyed key must be in none. */
  files?: () => Buffer[];
  cleanup: () => Promise<void>;
}

function vaultContract(name: string, open: () => Promise<Opened>) {
  describe(`The per-account key vault on ${name}`, () => {
    let opened: Opened;
    let store: AccountKeyStore;
    let vault: AccountKeyVault;
    const box = newBox();

    beforeEach(async () => {
      opened = await open();
      store = opened.store;
      vault = new AccountKeyVault(store, box, clock);
    });
    afterEach(() => opened.cleanup());

    it('seals to a pii:v1 string with no trace of the value, which opens only for its account and field', async () => {
      const sealed = await vault.seal('acct_a', 'ada@example.com', 'email');
      expect(sealed).to.match(/^pii:v1:[A-Za-z0-9_-]+$/).and.not.include('ada');
      expect(await vault.seal('acct_a', 'ada@example.com', 'email')).not.to.equal(sealed);
      expect(await vault.open('acct_a', sealed, 'email')).to.equal('ada@example.com');
      await vault.seal('acct_b', 'x', 'email');
      for (const [account, field] of [['acct_b', 'email'], ['acct_a', 'webhook-secret']] as const) {
        await vault.open(account, sealed, field).then(
          () => expect.fail(`opened for ${account} ${field}`),
          (err: unknown) => expect(err).to.be.instanceOf(SecretUnreadableError),
        );
      }
    });

    it('opens what was written before: sealed under the data key for <field>:<account>, or clear', async () => {
      const legacy = await box.seal('whsec_old', 'webhook-secret:acct_a');
      expect(await vault.open('acct_a', legacy, 'webhook-secret')).to.equal('whsec_old');
      expect(await vault.open('acct_a', 'ada@example.com', 'email')).to.equal('ada@example.com');
    });

    it('forgets one account for ever: its values no longer open, nothing is sealed for it again, others are untouched', async () => {
      const a = await vault.seal('acct_a', 'ada@example.com', 'email');
      const b = await vault.seal('acct_b', 'bob@example.com', 'email');
      const wrapped = (await store.find('acct_a'))!.wrapped!;
      await vault.forget('acct_a');
      expect(await vault.open('acct_a', a, 'email')).to.equal(null);
      expect(await vault.open('acct_b', b, 'email')).to.equal('bob@example.com');
      await vault.seal('acct_a', 'again', 'email').then(
        () => expect.fail('sealed for a forgotten account'),
        (err: unknown) => expect(err).to.be.instanceOf(AccountForgottenError),
      );
      expect(await store.find('acct_a')).to.deep.equal({ wrapped: null, forgotten_at: '2024-04-20T12:00:00.000Z' });
      // Again: nothing changes (a retried forgetting), and an account never keyed can be forgotten too.
      await vault.forget('acct_a');
      await vault.forget('acct_never');
      expect((await store.find('acct_never'))?.forgotten_at).to.be.a('string');
      for (const bytes of opened.files?.() ?? []) expect(bytes.includes(wrapped), 'the destroyed key is still in a file').to.equal(false);
    });

    it('keeps one key per account when two processes make it at once', async () => {
      const [x, y] = await Promise.all([vault.seal('acct_c', 'one', 'email'), new AccountKeyVault(store, box, clock).seal('acct_c', 'two', 'email')]);
      expect([await vault.open('acct_c', x, 'email'), await vault.open('acct_c', y, 'email')]).to.deep.equal(['one', 'two']);
    });
  });
}

vaultContract('SQLite (a file of its own)', async () => {
  const dir = tempDir();
  const file = join(dir, ACCOUNT_KEYS_FILE);
  const store = new SqliteAccountKeys(file);
  return {
    store,
    files: () => [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f)),
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

const url = process.env['POSTGRES_URL'];
if (url) {
  vaultContract('PostgreSQL (a schema of its own)', async () => {
    const schema = `keys_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const store = new PostgresAccountKeys(url, { schema });
    return {
      store,
      async cleanup() {
        await store.close();
        const admin = await pgSession(url);
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      },
    };
  });
} else {
  describe('The per-account key vault on PostgreSQL', () => it('runs when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)'));
}
