import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pgSession } from '../../infra/postgresql/database.js';
import { PostgresRequestLog } from '../../infra/postgresql/request-log.js';
import { REQUEST_LOG_FILE, SqliteRequestLog } from '../../infra/sqlite/request-log.js';
import { fixedClock } from '../../src/core/clock.js';
import { REFUSALS_LOGGED_PER_SECOND, RequestLog } from '../../src/core/request-log.js';
import type { RequestLogStore, RequestRecord } from '../../src/core/request-log.port.js';
import { until } from '../support/processes.js';
import { tempDir } from '../support/server.js';
import { requestLogContract } from './request-log.contract.js';

requestLogContract('SQLite (its own file, its own thread)', async () => {
  const dir = tempDir('request-log-');
  const file = join(dir, REQUEST_LOG_FILE);
  const opened: SqliteRequestLog[] = [new SqliteRequestLog(file)];
  return {
    store: opened[0]!,
    async reopen() {
      await opened.at(-1)!.close();
      opened.push(new SqliteRequestLog(file));
      return opened.at(-1)!;
    },
    async cleanup() {
      await opened.at(-1)!.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('The request log on PostgreSQL', () => {
  const url = process.env['POSTGRES_URL'];
  if (!url) {
    it('runs when POSTGRES_URL is set (npm run engines)');
    return;
  }
  requestLogContract('PostgreSQL (schema of its own)', async () => {
    const schema = `rl_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const opened: PostgresRequestLog[] = [new PostgresRequestLog(url, { schema })];
    return {
      store: opened[0]!,
      async reopen() {
        await opened.at(-1)!.close();
        opened.push(new PostgresRequestLog(url, { schema }));
        return opened.at(-1)!;
      },
      async cleanup() {
        await opened.at(-1)!.close();
        const admin = await pgSession(url);
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      },
    };
  });
});

describe('The request log writer (src/core/request-log.ts)', () => {
  const clock = fixedClock('2026-03-01T12:00:00Z');
  let dir: string;
  let log: RequestLog;
  const call = (n: number, more: Partial<RequestRecord> = {}): RequestRecord => ({
    request_id: `req_${String(n).padStart(16, '0')}`,
    account_id: 'acct_a',
    key_id: 'key_a1',
    at: clock.now().getTime(),
    channel: 'rest',
    operation: 'scores',
    tool: null,
    method: 'GET',
    path: '/v1/scores/{ticker}',
    status: 200,
    code: null,
    credits: 2,
    latency_ms: 1,
    ...more,
  });
  const open = (options: { batchRows?: number } = {}) => new RequestLog(new SqliteRequestLog(join(dir, REQUEST_LOG_FILE)), { clock, flushMs: 3_600_000, ...options });
  beforeEach(() => {
    dir = tempDir('request-log-writer-');
    log = open();
  });
  afterEach(async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps calls in its buffer until read, written in full on close', async () => {
    for (let i = 0; i < 5; i++) log.record(call(i));
    expect(log.pending).to.equal(5);
    await log.close();
    log = open();
    expect(await log.list({ account_id: 'acct_a', limit: 10 })).to.have.length(5);
  });

  it('writes the buffer as soon as it holds a batch, without waiting for the timer', async () => {
    await log.close();
    log = open({ batchRows: 3 });
    for (let i = 0; i < 2; i++) log.record(call(i));
    await new Promise((resolve) => setImmediate(resolve));
    expect(log.pending, 'under a batch: waits for the timer (an hour here)').to.equal(2);
    log.record(call(2));
    await until(() => log.pending === 0, 10_000);
  });

  it('has one batch in flight at a time: calls that end meanwhile wait in the buffer and go as the next batch', async () => {
    const batches: number[] = [];
    let release: () => void = () => undefined;
    const held: RequestLogStore = {
      append: async (records) => {
        batches.push(records.length);
        await new Promise<void>((resolve) => (release = resolve));
      },
      list: async () => [],
      prune: async () => 0,
      forget: async () => 0,
      size: async () => ({ rows: 0, bytes: 0 }),
      close: async () => undefined,
    };
    const writer = new RequestLog(held, { clock, flushMs: 3_600_000, batchRows: 3 });
    for (let i = 0; i < 3; i++) writer.record(call(i));
    await until(() => batches.length === 1, 10_000);
    for (let i = 3; i < 12; i++) writer.record(call(i));
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches, 'nothing more is sent while the first batch is written').to.deep.equal([3]);
    expect(writer.pending).to.equal(9);
    release();
    await until(() => batches.length === 2, 10_000);
    expect(batches).to.deep.equal([3, 9]);
    release();
    await writer.close();
  });

  it(`logs at most ${REFUSALS_LOGGED_PER_SECOND} refusals per account and second, answered calls all, and counts what it left out`, async () => {
    for (let i = 0; i < REFUSALS_LOGGED_PER_SECOND + 50; i++) log.record(call(i, { status: 429, code: 'rate_limited', credits: 0 }));
    for (let i = 0; i < 20; i++) log.record(call(1000 + i, { account_id: 'acct_b', status: 429, code: 'rate_limited' }));
    for (let i = 0; i < 200; i++) log.record(call(2000 + i));
    expect(log.dropped).to.equal(50);
    clock.advance(1000);
    log.record(call(5000, { status: 403, code: 'tier' }));
    expect(log.pending).to.equal(REFUSALS_LOGGED_PER_SECOND + 20 + 200 + 1);
  });

  it('drops the buffered calls of a forgotten account with its stored ones', async () => {
    log.record(call(1));
    await log.flush();
    log.record(call(2));
    log.record(call(3, { account_id: 'acct_b' }));
    expect(await log.forget('acct_a')).to.equal(1);
    expect(await log.list({ account_id: 'acct_a', limit: 10 })).to.deep.equal([]);
    expect(await log.list({ account_id: 'acct_b', limit: 10 })).to.have.length(1);
  });
});
