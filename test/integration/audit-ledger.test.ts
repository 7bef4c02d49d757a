import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { auditAccount, auditAll, formatAuditReport, formatAuditSummary } from '../../queries/audit-ledger/audit-ledger.query.js';
import { auditMonth, exportLedger, formatMonthAudit } from '../../queries/audit-ledger/ledger-month.query.js';
import { createHash } from 'node:crypto';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';

import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { openSqlite, type SqliteDb } from '../../infra/sqlite/database.js';
import type { EventRow } from '../../infra/sqlite/event-store.js';
import {
  balanceKey,
  usageBalances,
  usageProjection,
  type UsageBalanceDoc,
} from '../../projections/usage/usage.projection.js';
import { getUsageLedger } from '../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { AppError } from '../../src/core/errors.js';
import type { EventStore, ReadStreamOptions } from '../../src/core/event-store.port.js';
import { ProjectorRunner } from '../../src/core/projector-runner.js';
import { tempDir, testEnv } from '../support/server.js';
import { runLedger } from '../support/ledger-script.js';

const ACCOUNT = 'acc-audit';
const ENTERPRISE = 'acc-ent';

const debit = (cost: number, request_id: string, channel: 'rest' | 'mcp' = 'rest'): LedgerCommand => ({
  type: 'DebitCredits',
  data: { request_id, endpoint: 'divergence', channel, cost },
});

/** Two months and the start of a third: packs, alerts, an upgrade, overage, a refusal, a cancellation. */
const SCRIPT: [LedgerCommand, string][] = [
  [{ type: 'OpenLedger', data: { account_id: ACCOUNT, tier: 'free', pro: false } }, '2024-05-02T08:00:00Z'],
  [debit(600, 'r-1'), '2024-05-03T10:00:00Z'],
  [{ type: 'PurchasePack', data: { pack_id: 'pack-a', credits: 500 } }, '2024-05-04T10:00:00Z'],
  [debit(350, 'r-2'), '2024-05-05T10:00:00Z'], // alerts 75 and 90
  [debit(200, 'r-3', 'mcp'), '2024-05-06T10:00:00Z'], // allowance + prepaid; alert 100
  [debit(400, 'r-refused'), '2024-05-07T10:00:00Z'], // 350 left, overage off: 429, no event
  [{ type: 'SetPlan', data: { tier: 'hobbyist' } }, '2024-06-02T09:00:00Z'],
  [{ type: 'SwitchOverage', data: { on: true } }, '2024-06-02T09:05:00Z'],
  [debit(24_000, 'r-4'), '2024-06-03T10:00:00Z'],
  [debit(1_500, 'r-5'), '2024-06-04T10:00:00Z'], // allowance, prepaid and overage
  [{ type: 'PurchasePack', data: { pack_id: 'pack-b', credits: 1_000 } }, '2024-06-05T10:00:00Z'],
  [debit(100, 'r-6', 'mcp'), '2024-06-06T10:00:00Z'], // from the new pack
  [{ type: 'CancelPlan' }, '2024-06-20T10:00:00Z'],
  [debit(30, 'r-7'), '2024-07-02T10:00:00Z'], // falls back to free, July opens
];

describe('Ledger audit', () => {
  let dir: string;
  let services: Services;
  let runner: ProjectorRunner;
  let db: SqliteDb;
  let refused: string[];

  const row = (revision: number) =>
    db.prepare('SELECT * FROM events WHERE stream_id = ? AND revision = ?').get(ledgerStream(ACCOUNT), revision) as EventRow;
  const rowOf = (pred: (data: Record<string, unknown>, r: EventRow) => boolean) =>
    (db.prepare('SELECT * FROM events WHERE stream_id = ? ORDER BY revision').all(ledgerStream(ACCOUNT)) as EventRow[]).find((r) =>
      pred(JSON.parse(r.data) as Record<string, unknown>, r),
    )!;
  const restore = (r: EventRow) => {
    db.prepare('DELETE FROM events WHERE position = ?').run(r.position);
    db.prepare(
      `INSERT INTO events (position, id, stream_id, revision, type, data, metadata, recorded_at)
       VALUES (@position, @id, @stream_id, @revision, @type, @data, @metadata, @recorded_at)`,
    ).run(r);
  };
  const audit = () => auditAccount({ events: services.events, reads: services.reads, accountId: ACCOUNT });

  before(async () => {
    dir = tempDir();
    // The log's rows are edited as JSON below: every event a row of `events`, the form before debit
    // records (test/integration/debit-records.test.ts does the same to records).
    services = await openServices(loadConfig(testEnv(dir, '2024-07-15T12:00:00Z', { SCORES_DEMO: 'off', SCORES_LOG_DEBITS: 'events' })));
    refused = await runLedger(services.events, ACCOUNT, SCRIPT);
    await runLedger(services.events, ENTERPRISE, [
      [{ type: 'OpenLedger', data: { account_id: ENTERPRISE, tier: 'enterprise', pro: false } }, '2024-06-10T08:00:00Z'],
      [debit(3_000_000, 'e-1'), '2024-06-11T08:00:00Z'],
    ]);
    runner = new ProjectorRunner(services.events, services.reads, [usageProjection]);
    await runner.start();
    await runner.waitForHead();
    db = openSqlite(services.config.sqliteFile);
  });

  after(async () => {
    db?.close();
    await runner?.stop();
    await services?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('When the log and the read models agree', () => {
    it('reports the ledger sound: chain intact, every month and entry equal to the replay', async () => {
      const report = await audit();
      expect(report.problems).to.deep.equal([]);
      expect(report.ok).to.equal(true);
      expect(report.chain).to.equal(null);
      expect(report.periods.map((p) => p.period)).to.deep.equal(['2024-05', '2024-06', '2024-07']);
      for (const p of report.periods) expect(p.mismatches).to.deep.equal([]);
      expect(report.events).to.equal((await services.events.readStream(ledgerStream(ACCOUNT))).length);
      expect(report.entries).to.deep.include({ expected: report.events, actual: report.events, mismatches: [] });
      expect(formatAuditReport(report)).to.match(/^Account acc-audit: OK\. \d+ events, hash chain intact/);
    });

    it('recorded nothing for the refused call (429)', async () => {
      expect(refused).to.deep.equal(['2024-05-07T10:00:00Z']);
      const may = await services.reads.get(usageBalances, balanceKey(ACCOUNT, '2024-05'));
      expect(may).to.include({ debits: 3, credits_debited: 1_150, prepaid_credits: 350, used_this_month: 1_000 });
      expect(may!.alerts).to.deep.equal([75, 90, 100]);
      const june = await services.reads.get(usageBalances, balanceKey(ACCOUNT, '2024-06'));
      expect(june).to.include({
        tier: 'hobbyist',
        overage_credits: 150,
        credits_remaining: -150,
        prepaid_credits: 900,
        overage_cost_usd: 0.08,
      });
    });

    it('audits every account the read models know', async () => {
      const all = await auditAll({ events: services.events, reads: services.reads });
      expect(all.ok).to.equal(true);
      expect(all.accounts.map((a) => a.account_id)).to.deep.equal([ACCOUNT, ENTERPRISE]);
      expect(formatAuditSummary(all)).to.include('All 2 accounts pass.');
    });

    it('rebuilds identical read models from the log (no positions or clock times in them)', async () => {
      const snapshot = async () => {
        const out: Record<string, unknown[]> = {};
        for (const def of usageProjection.collections) {
          out[def.name] = [];
          for await (const d of services.reads.scan(def)) out[def.name]!.push(d);
        }
        return out;
      };
      const live = await snapshot();
      await runner.replay();
      expect(await snapshot()).to.deep.equal(live);
    });
  });

  describe('When the ledger is listed (GET /v1/usage/ledger)', () => {
    it('pages through every entry newest first', async () => {
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const page = await getUsageLedger(services.reads, services.events, { accountId: ACCOUNT, limit: 4, cursor });
        expect(page.count).to.equal(page.entries.length);
        expect(page.month).to.equal(null);
        seen.push(...page.entries.map((e) => e.seq));
        cursor = page.next_cursor;
      } while (cursor);
      const events = await services.events.readStream(ledgerStream(ACCOUNT));
      expect(seen).to.deep.equal(events.map((e) => e.revision).reverse());
    });

    it("keeps to one month and shows each charge's split", async () => {
      const june = await getUsageLedger(services.reads, services.events, { accountId: ACCOUNT, month: '2024-06' });
      expect(june.entries.every((e) => e.period === '2024-06')).to.equal(true);
      expect(june.next_cursor).to.equal(null);
      expect(june.entries.find((e) => e.request_id === 'r-5')).to.include({
        kind: 'CreditsDebited',
        endpoint: 'divergence',
        channel: 'rest',
        cost: 1_500,
        from_allowance: 1_000,
        from_prepaid: 350,
        from_overage: 150,
        at: '2024-06-04T10:00:00.000Z',
      });
      expect(june.entries.map((e) => e.request_id)).to.not.include('r-refused');
    });

    it('refuses a malformed month and a limit above 1000', async () => {
      for (const month of ['2024-13', '2024-6', 'june']) {
        const err = await getUsageLedger(services.reads, services.events, { accountId: ACCOUNT, month }).catch((e: unknown) => e);
        expect(err).to.be.instanceOf(AppError).and.to.include({ code: 'bad_request' });
      }
      const tooMany = await getUsageLedger(services.reads, services.events, { accountId: ACCOUNT, limit: 1001 }).catch((e: unknown) => e);
      expect(tooMany).to.be.instanceOf(AppError).and.to.include({ code: 'limit_exceeded' });
      const zero = await getUsageLedger(services.reads, services.events, { accountId: ACCOUNT, limit: 0 }).catch((e: unknown) => e);
      expect(zero).to.be.instanceOf(AppError).and.to.include({ code: 'bad_request' });
    });
  });

  describe("When an event's data is altered in the log", () => {
    let original: EventRow;
    before(() => {
      original = rowOf((d) => d['request_id'] === 'r-5');
      db.prepare(
        "UPDATE events SET data = json_set(data, '$.cost', 150, '$.from_allowance', 0, '$.from_prepaid', 0) WHERE position = ?",
      ).run(original.position);
    });
    after(() => restore(original));

    it('names the altered event in the chain check', async () => {
      const report = await audit();
      expect(report.ok).to.equal(false);
      expect(report.chain).to.include({ reason: 'hash_mismatch', revision: original.revision, type: 'CreditsDebited', event_id: original.id });
      expect(report.problems[0]).to.equal(
        `Hash chain broken at revision ${original.revision} (CreditsDebited at 2024-06-04T10:00:00.000Z, event ${original.id}): ` +
          'its data does not match its hash: it was altered after it was written.',
      );
      expect(formatAuditReport(report)).to.include(`Hash chain broken at revision ${original.revision}`);
    });

    it('also shows what the altered data would change in the figures', async () => {
      const june = (await audit()).periods.find((p) => p.period === '2024-06')!;
      expect(june.mismatches).to.deep.include({ field: 'used_allowance', expected: 24_000, actual: 25_000 });
    });
  });

  describe('When an event is deleted from the middle of the log', () => {
    let deleted: EventRow;
    before(() => {
      deleted = rowOf((d, r) => r.type === 'PackPurchased' && d['pack_id'] === 'pack-a');
      db.prepare('DELETE FROM events WHERE position = ?').run(deleted.position);
    });
    after(() => restore(deleted));

    it('finds the gap: the next event no longer follows its predecessor', async () => {
      const report = await audit();
      expect(report.ok).to.equal(false);
      expect(report.chain).to.include({ reason: 'prev_hash_mismatch', revision: deleted.revision + 1 });
      expect(report.problems).to.include(`The stream has no event at revision ${deleted.revision}: events were deleted from the log.`);
      expect(report.problems).to.include(`ledger_entries seq ${deleted.revision} (PackPurchased, revision ${deleted.revision}) has no event in the log.`);
      const may = report.periods.find((p) => p.period === '2024-05')!;
      expect(may.mismatches).to.deep.include({ field: 'prepaid_credits', expected: -150, actual: 350 });
    });
  });

  describe('By month (scores audit --month, scores ledger export --month)', () => {
    const month = (m: string) => auditMonth({ events: services.events, reads: services.reads, accountId: ACCOUNT, month: m });

    it('closes each month with the state it ended in: the fold of every event before it', async () => {
      const events = await services.events.readStream(ledgerStream(ACCOUNT));
      const closings = events.filter((e) => e.type === 'LedgerPeriodClosed');
      expect(closings.map((e) => (e.data as { period: string }).period)).to.deep.equal(['2024-05', '2024-06']);
      for (const c of closings) {
        const { last_hash: _h, ...before } = foldLedger(events.filter((e) => e.revision < c.revision));
        expect((c.data as { carried: unknown }).carried).to.deep.equal(before);
      }
    });

    it('replays June from May\'s closing event, reading June\'s events only, and finds it sound', async () => {
      const reads: ReadStreamOptions[] = [];
      const spied = Object.create(services.events, {
        readStream: { value: (id: string, o?: ReadStreamOptions) => (reads.push(o ?? {}), services.events.readStream(id, o)) },
      }) as EventStore;
      const report = await auditMonth({ events: spied, reads: services.reads, accountId: ACCOUNT, month: '2024-06' });
      expect(report.problems).to.deep.equal([]);
      expect(report.ok).to.equal(true);
      expect(report.opening.from).to.equal('closing_event');
      const all = await services.events.readStream(ledgerStream(ACCOUNT));
      const mayClosed = all.find((e) => e.type === 'LedgerPeriodClosed')!;
      const juneClosed = all.filter((e) => e.type === 'LedgerPeriodClosed')[1]!;
      expect(report.opening.revision).to.equal(mayClosed.revision);
      expect(report.first_revision).to.equal(mayClosed.revision + 1);
      expect(report.events).to.equal(juneClosed.revision - mayClosed.revision);
      expect(report.period!.mismatches).to.deep.equal([]);
      // Nothing before May's closing event was read.
      expect(Math.min(...reads.map((r) => r.fromRevision ?? 0))).to.equal(mayClosed.revision);
      expect(formatMonthAudit(report)).to.match(/^Account acc-audit, 2024-06: OK\. \d+ events .* replayed from the previous month's closing event/);
    });

    it('replays the first month from the start, and the current one up to the end of the log', async () => {
      const may = await month('2024-05');
      expect(may).to.include({ ok: true, first_revision: 0 });
      expect(may.opening.from).to.equal('stream_start');
      const july = await month('2024-07');
      expect(july.ok, july.problems.join('\n')).to.equal(true);
      expect(july.opening.from).to.equal('closing_event');
      expect(july.last_hash).to.equal((await audit()).last_hash);
      expect(await month('2024-09')).to.include({ ok: true, events: 0 });
    });

    it('names an altered event of that month, and leaves the other months sound', async () => {
      const r = rowOf((d) => d['request_id'] === 'r-5');
      db.prepare('UPDATE events SET data = ? WHERE position = ?').run(JSON.stringify({ ...JSON.parse(r.data), from_overage: 0 }), r.position);
      try {
        const june = await month('2024-06');
        expect(june.ok).to.equal(false);
        expect(june.chain).to.include({ reason: 'hash_mismatch', revision: r.revision });
        expect((await month('2024-07')).ok).to.equal(true);
      } finally {
        restore(r);
      }
    });

    it('exports a month as JSON lines that verify from the previous month\'s last hash, and the whole ledger from 64 zeros', async () => {
      const lines = (m?: string) => exportLedger({ events: services.events, reads: services.reads, accountId: ACCOUNT, month: m });
      const [may, june, july, whole] = await Promise.all([lines('2024-05'), lines('2024-06'), lines('2024-07'), lines()]);
      expect([...may, ...june, ...july]).to.deep.equal(whole);
      expect(june[0]!.prev_hash).to.equal(may.at(-1)!.hash);
      expect(june.at(-1)!.kind).to.equal('LedgerPeriodClosed');
      // The recipe of docs/ledger.md, written again here.
      const canonical = (v: unknown): string =>
        v === null || typeof v !== 'object'
          ? JSON.stringify(v)
          : Array.isArray(v)
            ? `[${v.map(canonical).join(',')}]`
            : `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
      const verify = (entries: typeof whole, start = '0'.repeat(64)) => {
        let prev = start;
        for (const e of entries) {
          const { hash: _h, ...rest } = e.data;
          const expected = createHash('sha256').update(`${e.prev_hash}\n${e.kind}\n${canonical(rest)}`).digest('hex');
          if (e.prev_hash !== prev || expected !== e.hash) return `chain broken at seq ${e.seq}`;
          prev = e.hash;
        }
        return 'ok';
      };
      expect(verify(whole)).to.equal('ok');
      expect(verify(june, may.at(-1)!.hash)).to.equal('ok');
      expect(verify(june)).to.match(/^chain broken at seq /);
    });
  });

  describe('When the last event is cut off the log', () => {
    let last: EventRow;
    before(async () => {
      const events = await services.events.readStream(ledgerStream(ACCOUNT));
      last = row(events[events.length - 1]!.revision);
      db.prepare('DELETE FROM events WHERE position = ?').run(last.position);
    });
    after(() => restore(last));

    it('keeps a valid chain, but the read models hold more than the log', async () => {
      const report = await audit();
      expect(report.chain).to.equal(null);
      expect(report.ok).to.equal(false);
      expect(report.problems.some((p) => p.startsWith(`ledger_entries seq ${last.revision} (CreditsDebited`))).to.equal(true);
      const july = report.periods.find((p) => p.period === '2024-07')!;
      expect(july.mismatches).to.deep.include({ field: 'used_this_month', expected: 0, actual: 30 });
    });
  });

  describe('When a usage_balances document is changed', () => {
    let original: UsageBalanceDoc;
    const put = (doc: UsageBalanceDoc) =>
      services.reads.commit({
        writes: [{ op: 'upsert', collection: usageBalances.name, id: balanceKey(doc.account_id, doc.period), doc }],
        checkpoints: {},
      });
    before(async () => {
      original = (await services.reads.get(usageBalances, balanceKey(ACCOUNT, '2024-06')))!;
      await put({ ...original, overage_credits: 25 });
    });
    after(() => put(original));

    it('names the field and both values', async () => {
      const report = await audit();
      expect(report.ok).to.equal(false);
      expect(report.chain).to.equal(null);
      const june = report.periods.find((p) => p.period === '2024-06')!;
      expect(june.mismatches).to.deep.equal([{ field: 'overage_credits', expected: 150, actual: 25 }]);
      expect(report.problems).to.deep.equal(['usage_balances 2024-06: overage_credits is 25, the log gives 150.']);
      expect(formatAuditReport(report)).to.include('AUDIT FAILED').and.to.include('overage_credits is 25, the log gives 150');
    });
  });

  describe('When the read models have a month the log does not', () => {
    const ghost = balanceKey(ACCOUNT, '2023-01');
    before(async () => {
      const june = (await services.reads.get(usageBalances, balanceKey(ACCOUNT, '2024-06')))!;
      const doc = { ...june, period: '2023-01' };
      await services.reads.commit({ writes: [{ op: 'upsert', collection: usageBalances.name, id: ghost, doc }], checkpoints: {} });
    });
    after(() => services.reads.commit({ writes: [{ op: 'delete', collection: usageBalances.name, id: ghost }], checkpoints: {} }));

    it('reports the extra document', async () => {
      const report = await audit();
      expect(report.periods[0]).to.deep.include({
        period: '2023-01',
        expected: null,
        mismatches: [{ field: 'document', expected: 'missing', actual: 'present' }],
      });
      expect(report.problems).to.deep.equal(['usage_balances 2023-01: a document exists, but the log has no such month.']);
    });
  });

  describe('After every tampering is undone', () => {
    it('passes again', async () => {
      expect((await audit()).problems).to.deep.equal([]);
    });
  });

  // A server may be serving while the audit runs: new debits reach the log before the read models.
  describe('While the projector has not applied the newest events yet', () => {
    before(async () => {
      await runner.stop();
      await runLedger(services.events, ACCOUNT, [
        [debit(5, 'r-late-1'), '2024-07-10T10:00:00Z'],
        [debit(7, 'r-late-2'), '2024-07-11T10:00:00Z'],
      ]);
    });
    after(async () => {
      runner = new ProjectorRunner(services.events, services.reads, [usageProjection]);
      await runner.start();
      await runner.waitForHead();
    });

    it('compares the read models with the log up to what they applied, and counts the rest', async () => {
      const report = await audit();
      expect(report.problems).to.deep.equal([]);
      expect(report.ok).to.equal(true);
      expect(report.not_yet_projected).to.equal(2);
      expect(report.entries.expected).to.equal(report.events - 2);
      expect(formatAuditReport(report)).to.match(/The last 2 events are not in the read models yet \(the projector is catching up\)/);
    });

    it('reads the read models again when the projector commits in the middle of the audit', async () => {
      // The months are read before the batch commits, the lines after it: one view would mix both.
      let caughtUp = false;
      const reads = new Proxy(services.reads, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop !== 'find' || typeof value !== 'function') return value;
          return async (def: { name: string }, ...rest: unknown[]) => {
            if (def.name === 'ledger_entries' && !caughtUp) {
              caughtUp = true;
              const live = new ProjectorRunner(services.events, services.reads, [usageProjection]);
              await live.start();
              await live.waitForHead();
              await live.stop();
            }
            return (value as (...a: unknown[]) => unknown).call(target, def, ...rest);
          };
        },
      });
      const report = await auditAccount({ events: services.events, reads, accountId: ACCOUNT });
      expect(caughtUp).to.equal(true);
      expect(report.problems).to.deep.equal([]);
      expect(report.not_yet_projected).to.equal(0);
    });
  });
});
