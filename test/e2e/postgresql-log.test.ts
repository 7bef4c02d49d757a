import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { openSqlite } from '../../infra/sqlite/database.js';
import { pgSession, withDatabase, type PgSession } from '../../infra/postgresql/database.js';
import { getJson, startTestServer, tempDir } from '../support/server.js';

/**
 * The service with POSTGRES_URL set: the demo is seeded into, metered calls are debited to and a
 * restart reads its balances back from the PostgreSQL log; the embedded file keeps no events.
 */
describe('The service with its event log on PostgreSQL', function () {
  this.timeout(180_000);
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs when POSTGRES_URL is set (npm run engines starts a PostgreSQL and prints it)');
    return;
  }
  const database = `scores_e2e_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const logUrl = withDatabase(url, database);
  let admin: PgSession;
  const dir = tempDir();
  before(async () => {
    admin = await pgSession(url);
    await admin.query(`CREATE DATABASE ${database}`);
  });
  after(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  });

  it('meters calls into the PostgreSQL log and reads the balance back after a restart', async () => {
    const now = '2019-03-15T12:00:00Z';
    let server = await startTestServer({ now, dir, env: { POSTGRES_URL: logUrl } });
    let key: string;
    let remaining: string | null;
    try {
      const issued = await createAccountWithKey(server.services, { tier: 'hobbyist', email: 'pg@example.test' });
      key = issued.key;
      await server.services.runner.waitForHead();
      const first = await getJson(`${server.url}/v1/scores/AAPL`, key);
      const second = await getJson(`${server.url}/v1/scores/AAPL`, key);
      expect([first.status, second.status]).to.deep.equal([200, 200]);
      remaining = second.headers.get('x-credits-remaining');
      expect(Number(remaining)).to.be.below(Number(first.headers.get('x-credits-remaining')));
    } finally {
      await server.stop();
    }

    const log = await pgSession(logUrl);
    try {
      const [counts] = await log.query<{ tickers: string; debits: string }>(
        `SELECT count(*) FILTER (WHERE type = 'TickerListed') AS tickers, count(*) FILTER (WHERE type LIKE 'CreditsDebited%') AS debits FROM scores.events`,
      );
      expect(Number(counts!.tickers)).to.be.greaterThan(0);
      expect(Number(counts!.debits)).to.be.at.least(2);
    } finally {
      await log.end();
    }
    const file = join(dir, 'scores.sqlite');
    if (existsSync(file)) {
      const db = openSqlite(file, { readonly: true });
      const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'events'`).all();
      db.close();
      expect(tables).to.deep.equal([]);
    }

    server = await startTestServer({ now, dir, env: { POSTGRES_URL: logUrl } });
    try {
      const again = await getJson(`${server.url}/v1/usage`, key);
      expect(again.status).to.equal(200);
      const third = await getJson(`${server.url}/v1/scores/AAPL`, key);
      expect(Number(third.headers.get('x-credits-remaining'))).to.be.below(Number(remaining));
    } finally {
      await server.stop();
    }
  });
});
