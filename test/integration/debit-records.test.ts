import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { catchUpReadModels } from '../../src/app/server.js';
import { fixedClock } from '../../src/core/clock.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { getUsageLedger } from '../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { auditAccount } from '../../queries/audit-ledger/audit-ledger.query.js';
import { auditMonth, exportLedger } from '../../queries/audit-ledger/ledger-month.query.js';
import { runCli } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';
import { loadDocsLedgerVerifier, type DocsLedgerVerifier } from '../support/docs-ledger-verifier.js';

/** The docs' verifier (docs/ledger.md, "The hash chain"), run from the page as a customer would paste it. */
const docsVerifier = await loadDocsLedgerVerifier();
const verify: DocsLedgerVerifier['verify'] = (entries, start) => docsVerifier.verify(entries, start);

const ACCOUNT = 'acc-records';
const MARCH = '2024-03-10T09:00:00.000Z';
const APRIL = '2024-04-02T09:00:00.000Z';

/**
 * Calls one at a time, `n` of them, with request ids of the service's own form (`req_` and 16
 * base64url characters); most name the key that made them (kept beside the debit), some none.
 */
async function lone(s: Services, from: number, n: number): Promise<void> {
  for (let i = from; i < from + n; i++) {
    const key_id = i % 4 === 3 ? undefined : `key_records${i % 2}`;
    await s.ledger.debit(ACCOUNT, { request_id: `req_${String(i).padStart(16, 'A')}`, endpoint: 'scores', channel: i % 2 ? 'mcp' : 'rest', cost: 1 + (i % 3), key_id });
  }
}

/** Calls in flight together: the ledger appends them as one batch. */
async function together(s: Services, from: number, n: number): Promise<void> {
  await Promise.all(Array.from({ length: n }, (_, i) => s.ledger.debit(ACCOUNT, { request_id: `together-${from + i}`, endpoint: 'history', channel: 'rest', cost: 2 })));
}

/**
 * An account's March and April: lone calls, calls in flight together, a pack, a month boundary.
 * The first service writes in `forms[0]`, the second (from the 9th lone call) in `forms[1]`.
 */
async function writeLedger(dir: string, forms: ['events' | 'records', 'events' | 'records']): Promise<void> {
  const clock = fixedClock(MARCH);
  const open = (form: string) => openServices(loadConfig(testEnv(dir, MARCH, { SCORES_DEMO: 'off', SCORES_LOG_DEBITS: form })), { clock });
  let s = await open(forms[0]);
  try {
    await s.ledger.execute(ACCOUNT, { type: 'OpenLedger', data: { account_id: ACCOUNT, tier: 'hobbyist', pro: false } });
    await lone(s, 0, 5);
    await together(s, 100, 8);
    await s.ledger.execute(ACCOUNT, { type: 'PurchasePack', data: { pack_id: 'p-1', credits: 1000 } });
    await lone(s, 5, 3);
  } finally {
    await s.close();
  }
  s = await open(forms[1]);
  try {
    await lone(s, 8, 4);
    clock.set(APRIL);
    await lone(s, 12, 6);
    await together(s, 200, 5);
    await lone(s, 18, 2);
  } finally {
    await s.close();
  }
}

const openAt = (dir: string) => openServices(loadConfig(testEnv(dir, APRIL, { SCORES_DEMO: 'off' })), { clock: fixedClock(APRIL) });
const count = (dir: string, sql: string): number => {
  const db = openSqlite(`${dir}/scores.sqlite`, { readonly: true });
  try {
    return (db.prepare(sql).get() as { n: number }).n;
  } finally {
    db.close();
  }
};

describe('Debit records: a call charged alone stored as a fixed-width row', function () {
  this.timeout(120_000);
  let upgraded: string;
  let old: string;
  let s: Services;

  before(async () => {
    // Upgraded: the old form, then records. Old: the same ledger in the old form only, which the
    // records must give back exactly.
    upgraded = tempDir('scores-records-');
    old = tempDir('scores-records-old-');
    await writeLedger(upgraded, ['events', 'records']);
    await writeLedger(old, ['events', 'events']);
    s = await openAt(upgraded);
    await catchUpReadModels(s, { progress: false });
  });

  after(async () => {
    await s?.close();
    rmSync(upgraded, { recursive: true, force: true });
    rmSync(old, { recursive: true, force: true });
  });

  it('keeps the old events and writes the new calls as records', () => {
    expect(count(upgraded, "SELECT count(*) AS n FROM events WHERE type = 'CreditsDebited'")).to.be.at.least(8);
    expect(count(upgraded, "SELECT count(*) AS n FROM events WHERE type = 'CreditsDebitedBatch'")).to.be.at.least(1);
    expect(count(upgraded, 'SELECT count(*) AS n FROM debit_records')).to.be.at.least(12);
    // A call's key (the account page's "last used") is kept in the record, not left to a generic event.
    expect(count(upgraded, 'SELECT count(*) AS n FROM debit_records WHERE key IS NOT NULL')).to.be.at.least(8);
    expect(count(old, 'SELECT count(*) AS n FROM debit_records')).to.equal(0);
  });

  it("gives back the account's stream exactly as the old form does: the same events, data and hashes", async () => {
    const o = await openAt(old);
    try {
      const form = (events: { type: string; data: unknown; metadata?: unknown; revision: number }[]) => events.map((e) => JSON.stringify([e.revision, e.type, e.data, e.metadata]));
      const mine = await s.events.readStream(ledgerStream(ACCOUNT));
      expect(form(mine)).to.deep.equal(form(await o.events.readStream(ledgerStream(ACCOUNT))));
      expect(mine.filter((e) => e.type === 'CreditsDebited')).to.have.length.at.least(20);
      // From any revision, and in the whole log, in position order.
      expect(form(await s.events.readStream(ledgerStream(ACCOUNT), { fromRevision: 9, maxCount: 7 }))).to.deep.equal(form(mine.slice(9, 16)));
      const all = (await s.events.readAll({ maxCount: 10_000 })).filter((e) => e.streamId === ledgerStream(ACCOUNT));
      expect(form(all)).to.deep.equal(form(mine));
      const positions = (await s.events.readAll({ maxCount: 10_000 })).map((e) => e.position);
      expect(positions).to.deep.equal([...positions].sort());
      expect(new Set(positions).size).to.equal(positions.length);
    } finally {
      await o.close();
    }
  });

  it('lists and exports the same lines and hashes as the old form, which the docs\' verifier accepts whole', async () => {
    const o = await openAt(old);
    try {
      await catchUpReadModels(o, { progress: false });
      const page = async (x: Services) => (await getUsageLedger(x.reads, x.events, { accountId: ACCOUNT, limit: 1000 })).entries;
      const mine = await page(s);
      expect(mine).to.deep.equal(await page(o));
      expect(verify([...mine].reverse())).to.equal('ok');
      const exported = await exportLedger({ events: s.events, reads: s.reads, accountId: ACCOUNT });
      expect(exported).to.deep.equal(await exportLedger({ events: o.events, reads: o.reads, accountId: ACCOUNT }));
      expect(verify(exported)).to.equal('ok');
      // Paged by 3 from the newest: the same lines, ranges of debits cut anywhere by the cursor.
      const paged: typeof mine = [];
      for (let cursor: string | null = null; ; ) {
        const p = await getUsageLedger(s.reads, s.events, { accountId: ACCOUNT, limit: 3, cursor });
        paged.push(...p.entries);
        if (!(cursor = p.next_cursor)) break;
      }
      expect(paged).to.deep.equal(mine);
    } finally {
      await o.close();
    }
  });

  it('passes the audit, whole and by month', async () => {
    const whole = await auditAccount({ events: s.events, reads: s.reads, accountId: ACCOUNT });
    expect(whole.problems).to.deep.equal([]);
    expect(whole.ok).to.equal(true);
    for (const month of ['2024-03', '2024-04']) {
      const m = await auditMonth({ events: s.events, reads: s.reads, accountId: ACCOUNT, month });
      expect(m.problems, month).to.deep.equal([]);
    }
  });

  describe('When a record is altered or removed', () => {
    let db: SqliteDb;
    let row: { position: number; revision: number; cost: number };
    before(() => {
      db = openSqlite(`${upgraded}/scores.sqlite`);
      row = db.prepare('SELECT position, revision, cost FROM debit_records ORDER BY position LIMIT 1 OFFSET 3').get() as typeof row;
    });
    after(() => db.close());

    it("names the altered call by its revision and id: its data no longer matches its hash", async () => {
      db.prepare('UPDATE debit_records SET cost = cost + 100, from_allowance = from_allowance + 100 WHERE position = ?').run(row.position);
      try {
        const report = await auditAccount({ events: s.events, reads: s.reads, accountId: ACCOUNT });
        expect(report.ok).to.equal(false);
        expect(report.chain).to.include({ reason: 'hash_mismatch', revision: row.revision, type: 'CreditsDebited' });
        const [event] = await s.events.readStream(ledgerStream(ACCOUNT), { fromRevision: row.revision, maxCount: 1 });
        expect(report.chain!.event_id).to.equal(event!.id);
      } finally {
        db.prepare('UPDATE debit_records SET cost = ?, from_allowance = from_allowance - 100 WHERE position = ?').run(row.cost, row.position);
      }
    });

    it('finds a removed record: the next line no longer follows the one before', async () => {
      const saved = db.prepare('SELECT * FROM debit_records WHERE position = ?').get(row.position) as Record<string, unknown>;
      db.prepare('DELETE FROM debit_records WHERE position = ?').run(row.position);
      try {
        const report = await auditAccount({ events: s.events, reads: s.reads, accountId: ACCOUNT });
        expect(report.ok).to.equal(false);
        expect(report.chain).to.include({ reason: 'prev_hash_mismatch', revision: row.revision + 1 });
        expect(report.problems).to.include(`The stream has no event at revision ${row.revision}: events were deleted from the log.`);
      } finally {
        const cols = Object.keys(saved);
        db.prepare(`INSERT INTO debit_records (${cols.join(', ')}) VALUES (${cols.map((c) => `@${c}`).join(', ')})`).run(saved);
      }
      expect((await auditAccount({ events: s.events, reads: s.reads, accountId: ACCOUNT })).ok).to.equal(true);
    });
  });

  it('passes `scores audit` and `scores ledger export` of the CLI on the upgraded store', async () => {
    const env = testEnv(upgraded, APRIL, { SCORES_DEMO: 'off' });
    const audit = await runCli(['audit', '--account', ACCOUNT, '--json'], env);
    expect(audit.code, audit.stderr).to.equal(0);
    expect(JSON.parse(audit.stdout)).to.include({ ok: true });
    const exported = await runCli(['ledger', 'export', '--account', ACCOUNT], env);
    expect(exported.code, exported.stderr).to.equal(0);
    const lines = exported.stdout.trim().split('\n').map((l) => JSON.parse(l) as Parameters<typeof verify>[0][number]);
    expect(lines).to.have.length(2 + 20 + 13 + 1 + 2);
    expect(verify(lines)).to.equal('ok');
  });
});
