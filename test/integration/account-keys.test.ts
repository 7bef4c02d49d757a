import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { AccountKeyVault } from '../../src/core/account-key-vault.js';
import { AesGcmSecretBox, dataKeyId, SecretUnreadableError } from '../../src/core/aes-gcm-secret-box.js';
import { fixedClock } from '../../src/core/clock.js';
import { AccountForgottenError, type AccountKeyStore } from '../../src/core/personal-data.port.js';
import { PostgresAccountKeys } from '../../infra/postgresql/account-keys.js';
import { pgSession } from '../../infra/postgresql/database.js';
import { ACCOUNT_KEYS_FILE, SqliteAccountKeys } from '../../infra/sqlite/account-keys.js';
import { projectRoot } from '../../src/core/paths.js';
import { until } from '../support/processes.js';
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

describe('Forgetting beside a reader of the key store (Litestream keeps one open while it replicates)', function () {
  this.timeout(60_000);

  it('does not wait for the reader: the WAL is truncated by the first forgetting after it has gone', async () => {
    const dir = tempDir();
    const file = join(dir, ACCOUNT_KEYS_FILE);
    const store = new SqliteAccountKeys(file);
    try {
      await store.create('acct_a', 'wrapped-a', '2024-04-20T12:00:00Z');
      await store.create('acct_b', 'wrapped-b', '2024-04-20T12:00:00Z');
      // Another process reads the file, and ends its read a second and a half later.
      const reader = spawn(process.execPath, ['-e', READER, file], { cwd: projectRoot(), stdio: ['ignore', 'pipe', 'inherit'] });
      let said = '';
      reader.stdout.on('data', (d: Buffer) => (said += d.toString()));
      const ended = new Promise((r) => reader.on('exit', r));
      await until(() => said.includes('reading'), 30_000);
      // A TRUNCATE that waited (the busy timeout is 5 s) would outlast the read and truncate.
      await store.destroy('acct_a', '2024-04-20T12:01:00Z');
      const walDuringRead = statSync(`${file}-wal`).size;
      await ended;
      expect(said, 'the reader held its read past the forgetting').to.include('released');
      expect(walDuringRead, 'the WAL beside the reader').to.be.greaterThan(0);
      await store.destroy('acct_b', '2024-04-20T12:02:00Z');
      expect(statSync(`${file}-wal`).size, 'the WAL once the reader has gone').to.equal(0);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A read transaction on the file named by argv[1], held 1.5 s, as another process holds it. */
const READER = `
const Database = require('better-sqlite3');
const db = new Database(process.argv[1]);
db.exec('BEGIN');
db.prepare('SELECT count(*) FROM account_keys').get();
process.stdout.write('reading\\n');
setTimeout(() => { db.exec('ROLLBACK'); db.close(); process.stdout.write('released\\n'); }, 1500);
`;

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
