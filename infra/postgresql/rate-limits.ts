import type pg from 'pg';
import type { BucketTake, TokenBucketStore } from '../../src/core/rate-limit-store.port.js';
import { GroupCommitQueue } from '../../src/core/group-commit.js';
import { checkSchemaName, openPool } from './database.js';

/** Takes waiting for the next statement, in arrival order. */
interface PendingTake {
  id: string;
  perSecond: number;
  capacity: number;
  resolve(take: BucketTake): void;
  reject(err: unknown): void;
}

/** What one statement asked of one bucket: `n` takes, at the latest rate asked. */
interface BucketAsk {
  id: string;
  perSecond: number;
  capacity: number;
  takes: PendingTake[];
}

/**
 * The accounts' token buckets in PostgreSQL, for API replicas that share one limit per account:
 * a row per bucket (`<schema>.rate_buckets`: tokens left and when they were counted), refilled
 * and taken from in one INSERT … ON CONFLICT DO UPDATE, so concurrent takes from any replica
 * queue on the row and never both take the last token. Time is the server's (`now()`), so
 * replicas' clocks do not matter.
 *
 * Takes that arrive while a statement is in flight share the next one (GroupCommitQueue): one row
 * per bucket asked for its `n` takes at once, which the row answers as `n` takes one after the
 * other would (the first `taken` of them allowed). Under load that is one round trip for many
 * calls instead of one each: the take was most of the statements a metered call cost the fleet.
 */
export class PostgresTokenBuckets implements TokenBucketStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  /** The table's creation, asked once; forgotten when it failed, so that the next take tries again. */
  private table: Promise<void> | null = null;
  private readonly pending = new GroupCommitQueue<PendingTake>((batch) => this.flush(batch));

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

  /**
   * Under a lock: two replicas creating the table at once would collide in the catalog. `rate`,
   * `cap` and `asked` carry a statement's ask into its ON CONFLICT branch (EXCLUDED has only the
   * table's columns); `taken` is how many of the asked takes were allowed. A table from before
   * them gains them (a replica of the previous version keeps writing `tokens`, `allowed`, `at`).
   */
  private async createTable(): Promise<void> {
    await this.pool.query(`
      SELECT pg_advisory_xact_lock(hashtext('scores.rate-buckets.${this.schema}'));
      CREATE SCHEMA IF NOT EXISTS ${this.schema};
      CREATE TABLE IF NOT EXISTS ${this.schema}.rate_buckets (
        id text PRIMARY KEY,
        tokens double precision NOT NULL,
        allowed boolean NOT NULL,
        at timestamptz NOT NULL
      );
      ALTER TABLE ${this.schema}.rate_buckets
        ADD COLUMN IF NOT EXISTS rate double precision,
        ADD COLUMN IF NOT EXISTS cap double precision,
        ADD COLUMN IF NOT EXISTS asked integer NOT NULL DEFAULT 1,
        ADD COLUMN IF NOT EXISTS taken integer NOT NULL DEFAULT 0`);
  }

  take(id: string, perSecond: number, capacity: number): Promise<BucketTake> {
    return new Promise((resolve, reject) => this.pending.push({ id, perSecond, capacity, resolve, reject }));
  }

  private async flush(batch: PendingTake[]): Promise<void> {
    const asks = new Map<string, BucketAsk>();
    for (const t of batch) {
      const ask = asks.get(t.id);
      if (ask) Object.assign(ask, { perSecond: t.perSecond, capacity: t.capacity }).takes.push(t);
      else asks.set(t.id, { id: t.id, perSecond: t.perSecond, capacity: t.capacity, takes: [t] });
    }
    try {
      await this.ensureTable();
      const answered = await this.takeMany([...asks.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)));
      for (const ask of asks.values()) {
        const row = answered.get(ask.id);
        if (!row) throw new Error(`rate bucket ${ask.id} was not answered`);
        // The bucket held tokens + taken before these takes: the k-th take left it one fewer.
        const before = row.tokens + row.taken;
        ask.takes.forEach((t, k) => (k < row.taken ? t.resolve({ allowed: true, tokens: before - k - 1 }) : t.resolve({ allowed: false, tokens: row.tokens })));
      }
    } catch (err) {
      for (const t of batch) t.reject(err);
    }
  }

  /** One statement for every bucket asked, in id order (two replicas' statements lock rows in the same order). */
  private async takeMany(asks: BucketAsk[]): Promise<Map<string, { tokens: number; taken: number }>> {
    // `refilled` is the bucket's tokens now: what it held, plus the rate times the seconds since
    // (never negative: a statement that started earlier may have committed a later `at`); a take
    // is allowed while a whole token is left, so `n` takes take LEAST(n, FLOOR(refilled)).
    const refilled = `LEAST(EXCLUDED.cap, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM now() - b.at)) * EXCLUDED.rate)`;
    const taken = (tokens: string, asked: string) => `LEAST(${asked}, GREATEST(0, FLOOR(${tokens})))::int`;
    const { rows } = await this.pool.query<{ id: string; tokens: number; taken: number }>({
      name: `${this.schema}.takeTokens`,
      text: `
        INSERT INTO ${this.schema}.rate_buckets AS b (id, tokens, allowed, at, rate, cap, asked, taken)
        SELECT r.id, r.cap - ${taken('r.cap', 'r.n')}, ${taken('r.cap', 'r.n')} > 0, now(), r.rate, r.cap, r.n, ${taken('r.cap', 'r.n')}
        FROM unnest($1::text[], $2::float8[], $3::float8[], $4::int[]) WITH ORDINALITY AS r(id, rate, cap, n, o)
        ORDER BY r.o
        ON CONFLICT (id) DO UPDATE SET
          tokens = ${refilled} - ${taken(refilled, 'EXCLUDED.asked')},
          taken = ${taken(refilled, 'EXCLUDED.asked')},
          allowed = ${taken(refilled, 'EXCLUDED.asked')} > 0,
          at = GREATEST(b.at, now()),
          rate = EXCLUDED.rate, cap = EXCLUDED.cap, asked = EXCLUDED.asked
        RETURNING id, tokens, taken`,
      values: [asks.map((a) => a.id), asks.map((a) => a.perSecond), asks.map((a) => a.capacity), asks.map((a) => a.takes.length)],
    });
    return new Map(rows.map((r) => [r.id, { tokens: r.tokens, taken: r.taken }]));
  }

  async close(): Promise<void> {
    await this.pending.drain();
    await this.pool.end();
  }
}
