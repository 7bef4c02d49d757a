import type pg from 'pg';
import type { RequestLogQuery, RequestLogSize, RequestLogStore, RequestRecord } from '../../src/core/request-log.port.js';
import { checkSchemaName, openPool } from './database.js';

type Row = Omit<RequestRecord, 'at' | 'credits'> & { at: string; credits: string };

const COLUMNS = ['account_id', 'at', 'request_id', 'key_id', 'channel', 'operation', 'tool', 'method', 'path', 'status', 'code', 'credits', 'latency_ms'] as const;
const TYPES = ['text', 'int8', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'int2', 'text', 'int8', 'float4'];

/**
 * The request log on PostgreSQL, in a schema of its own (`scores_requests`), apart from the log's
 * (`scores`): a dump of the books never carries it, and the replicas share it. A batch is one
 * INSERT of arrays; commits do not wait for their WAL flush (`synchronous_commit = off`): a call
 * of the log is worth a few lost on a server crash, not a disk flush on every batch.
 */
export class PostgresRequestLog implements RequestLogStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private table: Promise<void> | null = null;

  constructor(url: string, options: { schema?: string } = {}) {
    this.schema = checkSchemaName(options.schema ?? 'scores_requests');
    this.pool = openPool(url, { max: 2, applicationName: 'scores-request-log', settings: { synchronous_commit: 'off' } });
  }

  private ready(): Promise<void> {
    this.table ??= this.pool
      .query(
        `SELECT pg_advisory_xact_lock(hashtext('scores.request-log.${this.schema}'));
         CREATE SCHEMA IF NOT EXISTS ${this.schema};
         CREATE TABLE IF NOT EXISTS ${this.schema}.calls (
           account_id text NOT NULL, at bigint NOT NULL, request_id text NOT NULL, key_id text NOT NULL,
           channel text NOT NULL, operation text, tool text, method text NOT NULL, path text NOT NULL,
           status smallint NOT NULL, code text, credits bigint NOT NULL, latency_ms real NOT NULL
         );
         CREATE INDEX IF NOT EXISTS calls_by_account ON ${this.schema}.calls (account_id, at DESC, request_id DESC);
         CREATE INDEX IF NOT EXISTS calls_by_id ON ${this.schema}.calls (request_id)`,
      )
      .then(
        () => undefined,
        (err: unknown) => {
          this.table = null;
          throw err;
        },
      );
    return this.table;
  }

  async append(records: readonly RequestRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.ready();
    const arrays = COLUMNS.map((c) => records.map((r) => r[c]));
    const unnest = TYPES.map((t, i) => `$${i + 1}::${t}[]`).join(', ');
    await this.pool.query(`INSERT INTO ${this.schema}.calls (${COLUMNS.join(', ')}) SELECT * FROM unnest(${unnest})`, arrays);
  }

  async list(q: RequestLogQuery): Promise<RequestRecord[]> {
    await this.ready();
    const args: unknown[] = [q.account_id];
    const where = ['account_id = $1'];
    const add = (condition: (n: number) => string, ...values: unknown[]) => {
      where.push(condition(args.length + 1));
      args.push(...values);
    };
    if (q.key_ids !== undefined) add((n) => `key_id = ANY($${n}::text[])`, q.key_ids);
    if (q.operation !== undefined) add((n) => `operation = $${n}`, q.operation);
    if (q.status_class !== undefined) add((n) => `status BETWEEN $${n} AND $${n + 1}`, q.status_class * 100, q.status_class * 100 + 99);
    if (q.request_id !== undefined) add((n) => `request_id = $${n}`, q.request_id);
    if (q.from !== undefined && Number.isFinite(q.from)) add((n) => `at >= $${n}`, q.from);
    if (q.to !== undefined) add((n) => `at < $${n}`, q.to);
    if (q.after) add((n) => `(at, request_id) < ($${n}, $${n + 1})`, q.after.at, q.after.request_id);
    const { rows } = await this.pool.query<Row>(
      `SELECT ${COLUMNS.join(', ')} FROM ${this.schema}.calls WHERE ${where.join(' AND ')} ORDER BY at DESC, request_id DESC LIMIT $${args.length + 1}`,
      [...args, q.limit],
    );
    return rows.map((r) => ({ ...r, at: Number(r.at), credits: Number(r.credits), latency_ms: Math.round(r.latency_ms * 10) / 10 }));
  }

  async prune(before: number, perAccount: number): Promise<number> {
    await this.ready();
    const { rowCount } = await this.pool.query(
      `WITH ranked AS (
         SELECT ctid, at, row_number() OVER (PARTITION BY account_id ORDER BY at DESC, request_id DESC) AS n FROM ${this.schema}.calls
       )
       DELETE FROM ${this.schema}.calls c USING ranked r WHERE c.ctid = r.ctid AND (r.at < $1 OR r.n > $2)`,
      [before, perAccount],
    );
    return rowCount ?? 0;
  }

  async forget(accountId: string): Promise<number> {
    await this.ready();
    const { rowCount } = await this.pool.query(`DELETE FROM ${this.schema}.calls WHERE account_id = $1`, [accountId]);
    return rowCount ?? 0;
  }

  async size(): Promise<RequestLogSize> {
    await this.ready();
    const { rows } = await this.pool.query<{ rows: string; bytes: string }>(
      `SELECT (SELECT count(*) FROM ${this.schema}.calls) AS rows, pg_total_relation_size('${this.schema}.calls') AS bytes`,
    );
    return { rows: Number(rows[0]!.rows), bytes: Number(rows[0]!.bytes) };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
