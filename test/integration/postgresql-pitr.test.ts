import { expect } from 'chai';
import { existsSync, openSync, readdirSync, closeSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pgSession, type PgSession } from '../../infra/postgresql/database.js';
import { until } from '../support/processes.js';
import { privatePostgresMissing, startPrivateCluster, type PrivateCluster } from '../support/private-postgresql.js';

/** Ends the current WAL segment and waits until the archiver has copied it. */
async function archiveNow(db: PgSession): Promise<void> {
  const [{ file }] = (await db.query<{ file: string }>('SELECT pg_walfile_name(pg_switch_wal()) AS file')) as [{ file: string }];
  await until(async () => {
    const [stats] = await db.query<{ last: string | null }>('SELECT last_archived_wal AS last FROM pg_stat_archiver');
    return (stats?.last ?? '') >= file;
  }, 30_000, 100);
}

/** The message a promise is rejected with (it fails the test when it is fulfilled). */
async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
}

/**
 * `npm run engines -- postgresql-backup` and `postgresql-restore` (scripts/engines/postgresql-backup.mjs)
 * on a private cluster made by the engines' own code: a restore to a target time, and what a restore refuses.
 */
describe('Point-in-time restore of the engines\' PostgreSQL', function () {
  this.timeout(120_000);
  const missing = privatePostgresMissing();
  if (missing) {
    it(`runs where ${missing} are installed (it makes a cluster of its own, never the shared one)`);
    return;
  }
  let cluster: PrivateCluster;
  let backup: string;
  before(async () => {
    cluster = await startPrivateCluster();
  });
  after(async () => {
    await cluster?.destroy();
  });

  it('restores to a target time: every transaction committed by then, none after, and the cluster takes writes', async () => {
    let db = await pgSession(cluster.url);
    await db.query('CREATE TABLE marks (tag text PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())');
    await db.query("INSERT INTO marks (tag) VALUES ('before the backup')");
    backup = await cluster.backup();
    await db.query("INSERT INTO marks (tag) VALUES ('before the target')");
    // The server's own clock, which stamps the commits recovery_target_time is compared with.
    const [{ target }] = (await db.query<{ target: string }>("SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') AS target")) as [{ target: string }];
    await db.query("INSERT INTO marks (tag) VALUES ('after the target')");
    await archiveNow(db);
    await db.end();

    await cluster.lose();
    const endsAt = await cluster.restore(backup, target);
    db = await pgSession(cluster.url);
    try {
      expect((await db.query<{ tag: string }>('SELECT tag FROM marks ORDER BY at')).map((r) => r.tag)).to.deep.equal(['before the backup', 'before the target']);
      expect(Date.parse(endsAt.replace(' ', 'T').replace(/\+00$/, 'Z'))).to.be.at.most(Date.parse(target));
      await db.query("INSERT INTO marks (tag) VALUES ('after the restore')");
    } finally {
      await db.end();
    }
  });

  it('refuses a base backup that no longer matches its manifest and leaves no data directory, then restores a sound one to the archive\'s end', async () => {
    const damaged = await cluster.backup();
    const fd = openSync(join(damaged, 'global', 'pg_control'), 'r+');
    writeSync(fd, Buffer.from([0xff]), 0, 1, 100);
    closeSync(fd);
    const data = join(cluster.home, 'postgresql', 'data');
    expect(await refusal(cluster.restore(damaged)), 'over a running cluster').to.match(/PostgreSQL is running/);
    await cluster.engines(['stop', 'postgresql']);
    expect(await refusal(cluster.restore(backup)), 'over a stopped one').to.match(/is not empty: move it away first/);

    await cluster.lose();
    expect(await refusal(cluster.restore(damaged))).to.match(/not a sound base backup \(pg_verifybackup\)/);
    expect(existsSync(data) && readdirSync(data).length > 0, 'a data directory left behind').to.equal(false);

    // The first backup, then the archive across the first restore's new timeline, to its end.
    await cluster.restore(backup);
    const db = await pgSession(cluster.url);
    try {
      expect((await db.query<{ tag: string }>('SELECT tag FROM marks ORDER BY at')).map((r) => r.tag)).to.deep.equal(['before the backup', 'before the target', 'after the restore']);
    } finally {
      await db.end();
    }
  });
});
