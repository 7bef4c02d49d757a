import { expect } from 'chai';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { pgSession, withDatabase, type PgSession } from '../../infra/postgresql/database.js';
import { LEDGER_KEY_FILE } from '../../infra/files/ledger-keyring.js';
import { ledgerHead } from '../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { verifySignedHead } from '../../src/domain/ledger/ledger-head.js';
import { tempDir, testEnv } from '../support/server.js';

/**
 * A split deployment (docs/operations.md, "The ledger signing key"): processes on one PostgreSQL
 * log, each with a data directory of its own, sign with LEDGER_SIGNING_KEY alone, all with one key;
 * one without it signs nothing and generates no key of its own.
 */
describe('Ledger heads signed on a shared PostgreSQL log', function () {
  this.timeout(120_000);
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)');
    return;
  }
  const database = `scores_sign_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const logUrl = withDatabase(url, database);
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  const dirs = [tempDir('scores-sign-a-'), tempDir('scores-sign-b-'), tempDir('scores-sign-c-')];
  const opened: Services[] = [];
  let admin: PgSession;
  const open = async (dir: string, extra: Record<string, string>) => {
    const s = await openServices(loadConfig(testEnv(dir, '2019-03-15T12:00:00Z', { SCORES_DEMO: 'off', POSTGRES_URL: logUrl, ...extra })));
    opened.push(s);
    return s;
  };
  before(async () => {
    admin = await pgSession(url);
    await admin.query(`CREATE DATABASE ${database}`);
  });
  after(async () => {
    for (const s of opened) await s.close();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('signs with the environment key in every process, and with none in a process without it', async () => {
    const a = await open(dirs[0]!, { LEDGER_SIGNING_KEY: pem });
    const b = await open(dirs[1]!, { LEDGER_SIGNING_KEY: Buffer.from(pem).toString('base64') });
    const c = await open(dirs[2]!, {});
    const { account_id: account } = await createAccountWithKey(a, { tier: 'hobbyist' });
    await a.runner.start();
    await a.runner.waitForHead();
    const head = (await ledgerHead(a.reads, a.events, account))!;
    const fromA = a.queries.signHead(head)!;
    const fromB = b.queries.signHead(head)!;
    expect(fromA.key_id).to.equal(fromB.key_id);
    expect(a.keyring.keys).to.deep.equal(b.keyring.keys);
    expect(verifySignedHead(fromB, a.keyring.keys)).to.deep.include({ ok: true });
    expect(c.keyring).to.include({ signer: null, source: 'none' });
    expect(c.queries.signHead(head)).to.equal(null);
    for (const d of dirs) expect(existsSync(join(d, LEDGER_KEY_FILE)), d).to.equal(false);
  });
});
