import type pg from 'pg';
import type { BucketTake, TokenBucketStore } from '../../src/core/rate-limit-store.port.js';
import { checkSchemaName, openPool } from './database.js';

/**
 * The accounts' token buckets in PostgreSQL, for API replicas that share one limit per account:
 * a row per bucket (`<schema>.rate_buckets`: tokens left and when they were counted), refilled
 * and taken from in one INSERT … ON CONFLICT DO UPDATE, so concurrent takes from any replica
 * queue on the row and never both take the last token. Time is the server's (`now()`), so
 * replicas' clocks do not matter.
 */
export class PostgresTokenBuckets implements TokenBucketStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  /** The table's creation, asked once; forgotten when it failed, so that the next take tries again. */
  private table: Promise<void> | null = null;

  constructor(url: string, options: { schema?: string; pool?: number } = {}) {
    this.schema = checkSchemaName(options.schema ?? 'scores');
    // A take does not wait for its WAL flush: a bucket is a few seconds of state, and a server crash
    // that loses its last takes gives a caller a few tokens back, never charges anything. Every
    // metered call takes one, so a flush each would put the disk on every call's path.
    this.pool = openPool(url, { max: options.pool ?? 4, applicationName: 'scores-rate-limits', settings: { synchronous_commit: 'off' } });
  }

  private ensureTable(): Promise<void> {
    this.table ??= this.createTable().catch((err: unknown) => {
      this.table = null;
      throw err;
    });
    return this.table;
  }

  /** Under a lock: two replicas creating the table at once would collide in the catalog. */
  private async createTable(): Promise<void> {
    await this.pool.query(`
      SELECT pg_advisory_xact_lock(hashtext('scores.rate-buckets.${this.schema}'));
      CREATE SCHEMA IF NOT EXISTS ${this.schema};
      CREATE TABLE IF NOT EXISTS ${this.schema}.rate_buckets (
        id text PRIMARY KEY,
        tokens double precision NOT NULL,
        allowed boolean NOT NULL,
        at timestamptz NOT NULL
      )`);
  }

  async take(id: string, perSecond: number, capacity: number): Promise<BucketTake> {
    await this.ensureTable();
    // `refilled` is the bucket's tokens now: what it held, plus the rate times the seconds since
    // (never negative: a statement that started earlier may have committed a later `at`).
    const refilled = `LEAST($3::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - b.at)) * $2::float8)`;
    const { rows } = await this.pool.query<{ tokens: number; allowed: boolean }>({
      name: `${this.schema}.takeToken`,
      text: `
        INSERT INTO ${this.schema}.rate_buckets AS b (id, tokens, allowed, at)
        VALUES ($1, CASE WHEN $3::float8 >= 1 THEN $3::float8 - 1 ELSE $3::float8 END, $3::float8 >= 1, now())
        ON CONFLICT (id) DO UPDATE SET
          tokens = CASE WHEN ${refilled} >= 1 THEN ${refilled} - 1 ELSE ${refilled} END,
          allowed = ${refilled} >= 1,
          at = GREATEST(b.at, now())
        RETURNING tokens, allowed`,
      values: [id, perSecond, capacity],
    });
    return { allowed: rows[0]!.allowed, tokens: rows[0]!.tokens };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
