import type { AccountKeyStore, StoredAccountKey } from '../../src/core/personal-data.port.js';
import { BUSY_TIMEOUT_MS, openSqlite, type SqliteDb } from './database.js';

export const ACCOUNT_KEYS_FILE = 'account-keys.sqlite';

type Row = { wrapped: string | null; forgotten_at: string | null };

/**
 * The embedded store of the accounts' keys: a file of its own beside the log
 * (`<data dir>/account-keys.sqlite`), so that a copy of the log never carries them. A destroyed
 * key leaves nothing behind: `secure_delete` zeroes what a write frees, and the WAL is
 * checkpointed and truncated after each forgetting, so the old page leaves the WAL too, unless
 * another connection is reading (Litestream holds a read transaction for as long as it
 * replicates: then its replica keeps the old page until its snapshots age out,
 * docs/backup-litestream.md).
 */
export class SqliteAccountKeys implements AccountKeyStore {
  private readonly db: SqliteDb;

  constructor(file: string) {
    this.db = openSqlite(file, { synchronous: 'FULL' });
    this.db.pragma('secure_delete = ON');
    this.db.exec(`CREATE TABLE IF NOT EXISTS account_keys (
      account_id   TEXT PRIMARY KEY,
      wrapped      TEXT,
      created_at   TEXT NOT NULL,
      forgotten_at TEXT,
      CHECK ((wrapped IS NULL) <> (forgotten_at IS NULL))
    )`);
  }

  async find(accountId: string): Promise<StoredAccountKey | null> {
    const row = this.db.prepare('SELECT wrapped, forgotten_at FROM account_keys WHERE account_id = ?').get(accountId) as Row | undefined;
    return row ? stored(row) : null;
  }

  async create(accountId: string, wrapped: string, at: string): Promise<StoredAccountKey> {
    this.db.prepare('INSERT INTO account_keys (account_id, wrapped, created_at) VALUES (?, ?, ?) ON CONFLICT (account_id) DO NOTHING').run(accountId, wrapped, at);
    return (await this.find(accountId))!;
  }

  async destroy(accountId: string, at: string): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO account_keys (account_id, wrapped, created_at, forgotten_at) VALUES (?, NULL, ?, ?)
         ON CONFLICT (account_id) DO UPDATE SET wrapped = NULL, forgotten_at = coalesce(forgotten_at, excluded.forgotten_at)`,
      )
      .run(accountId, at, at);
    // Another connection reading at this instant keeps the WAL; the next forgetting truncates it.
    // Without waiting for that reader: a TRUNCATE checkpoint holds every writer of the file while it
    // waits, and under Litestream, whose read transaction never ends, it would hold them for the
    // whole busy timeout and then fail anyway.
    this.db.pragma('busy_timeout = 0');
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

const stored = (row: Row): StoredAccountKey =>
  row.wrapped !== null ? { wrapped: row.wrapped, forgotten_at: null } : { wrapped: null, forgotten_at: row.forgotten_at ?? '' };
