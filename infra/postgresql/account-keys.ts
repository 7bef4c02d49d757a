import type pg from 'pg';
import type { AccountKeyStore, StoredAccountKey } from '../../src/core/personal-data.port.js';
import { checkSchemaName, openPool } from './database.js';

type Row = { wrapped: string | null; forgotten_at: Date | null };

/**
 * The accounts' keys on PostgreSQL, in a schema of their own (`scores_keys` by default) so that a
 * dump of the log's schema never carries them. A destroyed key's row is vacuumed at once, so its
 * old version does not wait in the table's pages for autovacuum (docs/ledger.md says what WAL
 * archives and backups still hold).
 */
export class PostgresAccountKeys implements AccountKeyStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private table: Promise<void> | null = null;

  constructor(url: string, options: { schema?: string } = {}) {
    this.schema = checkSchemaName(options.schema ?? 'scores_keys');
    this.pool = openPool(url, { max: 2, applicationName: 'scores-account-keys' });
  }

  private ready(): Promise<void> {
    this.table ??= this.pool
      .query(
        `SELECT pg_advisory_xact_lock(hashtext('scores.account-keys.${this.schema}'));
         CREATE SCHEMA IF NOT EXISTS ${this.schema};
         CREATE TABLE IF NOT EXISTS ${this.schema}.account_keys (
           account_id   text PRIMARY KEY,
           wrapped      text,
           created_at   timestamptz NOT NULL,
           forgotten_at timestamptz,
           CHECK ((wrapped IS NULL) <> (forgotten_at IS NULL))
         )`,
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

  async find(accountId: string): Promise<StoredAccountKey | null> {
    await this.ready();
    const { rows } = await this.pool.query<Row>(`SELECT wrapped, forgotten_at FROM ${this.schema}.account_keys WHERE account_id = $1`, [accountId]);
    return rows[0] ? stored(rows[0]) : null;
  }

  async create(accountId: string, wrapped: string, at: string): Promise<StoredAccountKey> {
    await this.ready();
    await this.pool.query(`INSERT INTO ${this.schema}.account_keys (account_id, wrapped, created_at) VALUES ($1, $2, $3) ON CONFLICT (account_id) DO NOTHING`, [accountId, wrapped, at]);
    return (await this.find(accountId))!;
  }

  async destroy(accountId: string, at: string): Promise<void> {
    await this.ready();
    await this.pool.query(
      `INSERT INTO ${this.schema}.account_keys (account_id, wrapped, created_at, forgotten_at) VALUES ($1, NULL, $2, $2)
       ON CONFLICT (account_id) DO UPDATE SET wrapped = NULL, forgotten_at = coalesce(${this.schema}.account_keys.forgotten_at, excluded.forgotten_at)`,
      [accountId, at],
    );
    await this.pool.query(`VACUUM ${this.schema}.account_keys`);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

const stored = (row: Row): StoredAccountKey =>
  row.wrapped !== null ? { wrapped: row.wrapped, forgotten_at: null } : { wrapped: null, forgotten_at: (row.forgotten_at ?? new Date(0)).toISOString() };
