import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { uuidV7 } from '../../infra/sqlite/uuid-v7.js';
import { systemClock } from '../../src/core/clock.js';
import { tempDir } from '../support/server.js';
import { fmt, median, report } from './stats.js';

const DATA = {
  request_id: 'req_0123456789abcdef',
  endpoint: 'scores',
  channel: 'rest',
  cost: 2,
  from_allowance: 2,
  from_prepaid: 0,
  from_overage: 0,
  period: '2024-03',
  at: '2024-03-15T12:00:00.000Z',
  prev_hash: 'a'.repeat(64),
  hash: 'b'.repeat(64),
};

/** Durable appends of 25-event groups on a log of 100,000 events: CPU per event and commit latency. */
async function appendWith(newId: () => string): Promise<{ cpuPerEvent: number; msPerCommit: number }> {
  const dir = tempDir('scores-bench-ids-');
  const db = openSqlite(join(dir, 'scores.sqlite'));
  const store = new SqliteEventStore(db, systemClock);
  try {
    const events = (n: number) => Array.from({ length: n }, () => ({ id: newId(), type: 'CreditsDebited', data: DATA }));
    for (let i = 0; i < 100; i++) await store.append(`ledger-prefill-${i}`, events(1000));
    let revision = -1;
    const commits = 1000;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < commits; i++) {
      revision = (await store.append('ledger-acct', events(25), revision < 0 ? 'no_stream' : revision)).nextExpectedRevision;
    }
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { cpuPerEvent: (cpu.user + cpu.system) / (commits * 25), msPerCommit: ms / commits };
  } finally {
    await store.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Why the SQLite log's event ids are UUID v7: random v4 ids scatter the unique id index's
 * inserts over its pages, time-ordered v7 ids append to its right edge. Same run, same appends.
 */
export async function benchEventIds(runs: number): Promise<void> {
  const v4: { cpuPerEvent: number; msPerCommit: number }[] = [];
  const v7: { cpuPerEvent: number; msPerCommit: number }[] = [];
  for (let i = 0; i < runs; i++) {
    v4.push(await appendWith(randomUUID));
    v7.push(await appendWith(uuidV7));
  }
  const cpu4 = median(v4.map((r) => r.cpuPerEvent));
  const cpu7 = median(v7.map((r) => r.cpuPerEvent));
  const lat4 = median(v4.map((r) => r.msPerCommit));
  const lat7 = median(v7.map((r) => r.msPerCommit));
  report('append, random v4 ids (25-event commits)', `${fmt(cpu4)} us CPU/event, ${fmt(lat4, 2)} ms/commit`, '(baseline, same run)', true);
  report('append, time-ordered v7 ids', `${fmt(cpu7)} us CPU/event, ${fmt(lat7, 2)} ms/commit`, '', true);
  report('v7 ids: CPU per event vs v4', `${fmt(cpu4 / cpu7, 1)}x less`, '> 1x', cpu7 < cpu4);
}
