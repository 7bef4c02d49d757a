/**
 * The embedded request log's tables and statements, run by its thread (request-log.worker.ts).
 *
 * A call is one row of numbers: the account, its key, the route (channel, method, path template,
 * rate key, tool) and a refusal's code are references into `names`, a dictionary of the few
 * strings that repeat on every row; a request id `req_…` is stored as its 12 bytes (the
 * millisecond it was made, then 6 random: newRequestId), so that its index grows at its end. Two
 * indexes: by account and time (the listing, newest first) and by request id (the detail).
 */
import type { Statement } from 'better-sqlite3';
import type { RequestLogQuery, RequestLogSize, RequestRecord } from '../../src/core/request-log.port.js';
import type { SqliteDb } from './database.js';
import { CALL_WIDTH, type EncodedCalls } from './request-log-batch.js';

const DDL = `
CREATE TABLE IF NOT EXISTS names (ref INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS calls (
  account INTEGER NOT NULL,
  at      INTEGER NOT NULL,
  id      BLOB NOT NULL,
  key     INTEGER NOT NULL,
  route   INTEGER NOT NULL,
  status  INTEGER NOT NULL,
  code    INTEGER,
  credits INTEGER NOT NULL,
  latency INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_by_account ON calls (account, at);
CREATE INDEX IF NOT EXISTS calls_by_id ON calls (id);
`;

/** A route as a dictionary entry holds it. */
type Route = Pick<RequestRecord, 'channel' | 'method' | 'path' | 'operation' | 'tool'>;

const REQUEST_ID = /^req_[A-Za-z0-9_-]{16}$/;

/** A request id as stored: the 12 bytes of `req_` + 16 base64url characters, else the text itself. */
export function storedId(requestId: string): Buffer | string {
  return REQUEST_ID.test(requestId) ? Buffer.from(requestId.slice(4), 'base64url') : requestId;
}

const idText = (id: Buffer | string): string => (typeof id === 'string' ? id : `req_${id.toString('base64url')}`);

type Row = { account: number; at: number; id: Buffer | string; key: number; route: number; status: number; code: number | null; credits: number; latency: number };

/** Rows deleted at most per statement of a prune, so that a large one never holds the file's write lock long. */
const DELETE_CHUNK = 5000;

export class RequestLogDb {
  private readonly refs = new Map<string, number>();
  private readonly texts = new Map<number, string>();
  private readonly routes = new Map<number, Route>();
  private insert: Statement | undefined;
  /** The dictionary's reference of each number the sending side gave a name (request-log-batch.ts). */
  private readonly wire: number[] = [];

  constructor(private readonly db: SqliteDb) {
    db.exec(DDL);
    for (const { ref, name } of db.prepare('SELECT ref, name FROM names').all() as { ref: number; name: string }[]) this.remember(ref, name);
  }

  private remember(ref: number, name: string): void {
    this.refs.set(name, ref);
    this.texts.set(ref, name);
    if (name.startsWith('route:')) this.routes.set(ref, JSON.parse(name.slice(6)) as Route);
  }

  /** The reference of `name`, added to the dictionary when new. */
  private ref(name: string): number {
    const known = this.refs.get(name);
    if (known !== undefined) return known;
    this.db.prepare('INSERT OR IGNORE INTO names (name) VALUES (?)').run(name);
    const { ref } = this.db.prepare('SELECT ref FROM names WHERE name = ?').get(name) as { ref: number };
    this.remember(ref, name);
    return ref;
  }

  /**
   * A batch as the serving thread sent it (request-log-batch.ts): its new names are added to the
   * dictionary, then every call is one row, in one transaction.
   */
  appendEncoded(batch: EncodedCalls): void {
    const wire = this.wire;
    for (const [n, name] of batch.names) wire[n] = this.ref(name);
    const insert = (this.insert ??= this.db.prepare('INSERT INTO calls (account, at, id, key, route, status, code, credits, latency) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'));
    const v = batch.numbers;
    this.db.transaction(() => {
      batch.requestIds.forEach((id, i) => {
        const o = i * CALL_WIDTH;
        insert.run(wire[v[o + 1]!], v[o], storedId(id), wire[v[o + 2]!], wire[v[o + 3]!], v[o + 4], v[o + 5]! < 0 ? null : wire[v[o + 5]!], v[o + 6], Math.round(v[o + 7]! * 10));
      });
    })();
  }

  list(q: RequestLogQuery): RequestRecord[] {
    const account = this.refs.get(`account:${q.account_id}`);
    if (account === undefined) return [];
    const where = ['account = ?'];
    const args: unknown[] = [account];
    if (!this.narrow(q, where, args)) return [];
    const rows = this.db.prepare(`SELECT * FROM calls WHERE ${where.join(' AND ')} ORDER BY at DESC, id DESC LIMIT ?`).all(...args, q.limit) as Row[];
    return rows.map((row) => this.record(q.account_id, row));
  }

  /** Adds the query's conditions; false when one of them matches nothing this store knows. */
  private narrow(q: RequestLogQuery, where: string[], args: unknown[]): boolean {
    if (q.key_ids !== undefined) {
      const keys = q.key_ids.flatMap((id) => this.refs.get(`key:${id}`) ?? []);
      if (keys.length === 0) return false;
      where.push(`key IN (${keys.map(() => '?').join(', ')})`);
      args.push(...keys);
    }
    if (q.operation !== undefined) {
      const routes = [...this.routes].filter(([, r]) => r.operation === q.operation).map(([ref]) => ref);
      if (routes.length === 0) return false;
      where.push(`route IN (${routes.map(() => '?').join(', ')})`);
      args.push(...routes);
    }
    const add = (condition: string, ...values: unknown[]) => {
      where.push(condition);
      args.push(...values);
    };
    if (q.status_class !== undefined) add('status BETWEEN ? AND ?', q.status_class * 100, q.status_class * 100 + 99);
    if (q.request_id !== undefined) add('id = ?', storedId(q.request_id));
    if (q.from !== undefined) add('at >= ?', q.from);
    if (q.to !== undefined) add('at < ?', q.to);
    if (q.after) add('(at < ? OR (at = ? AND id < ?))', q.after.at, q.after.at, storedId(q.after.request_id));
    return true;
  }

  private record(accountId: string, row: Row): RequestRecord {
    const route = this.routes.get(row.route)!;
    return {
      request_id: idText(row.id),
      account_id: accountId,
      key_id: this.texts.get(row.key)!.slice('key:'.length),
      at: row.at,
      ...route,
      status: row.status,
      code: row.code === null ? null : this.texts.get(row.code)!.slice('code:'.length),
      credits: row.credits,
      latency_ms: row.latency / 10,
    };
  }

  /** Each account's calls before `before`, and its oldest beyond `perAccount`, deleted a chunk at a time. */
  prune(before: number, perAccount: number): number {
    const accounts = this.db.prepare('SELECT account, count(*) AS n, min(at) AS oldest FROM calls GROUP BY account').all() as { account: number; n: number; oldest: number }[];
    let deleted = 0;
    for (const a of accounts) {
      let cutoff = before;
      if (a.n > perAccount) {
        const kept = this.db.prepare('SELECT at FROM calls WHERE account = ? ORDER BY at DESC LIMIT 1 OFFSET ?').get(a.account, perAccount - 1) as { at: number };
        cutoff = Math.max(cutoff, kept.at);
      }
      if (a.oldest < cutoff) deleted += this.deleteWhere('account = ? AND at < ?', a.account, cutoff);
    }
    return deleted;
  }

  private deleteWhere(condition: string, ...args: unknown[]): number {
    const chunk = this.db.prepare(`DELETE FROM calls WHERE rowid IN (SELECT rowid FROM calls WHERE ${condition} LIMIT ${DELETE_CHUNK})`);
    let deleted = 0;
    for (;;) {
      const n = chunk.run(...args).changes;
      if (n === 0) return deleted;
      deleted += n;
    }
  }

  /**
   * Every call of the account, deleted with its pages zeroed (`secure_delete`), and the WAL
   * truncated when no other connection reads, so that what was deleted leaves the WAL too.
   */
  forget(accountId: string): number {
    const account = this.refs.get(`account:${accountId}`);
    if (account === undefined) return 0;
    this.db.pragma('secure_delete = ON');
    try {
      const deleted = this.deleteWhere('account = ?', account);
      this.db.pragma('wal_checkpoint(TRUNCATE)');
      return deleted;
    } finally {
      this.db.pragma('secure_delete = OFF');
    }
  }

  /** Rows, and the bytes of the file's pages in use (the WAL folded in first). */
  size(): RequestLogSize {
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    const { rows } = this.db.prepare('SELECT count(*) AS rows FROM calls').get() as { rows: number };
    const pages = Number(this.db.pragma('page_count', { simple: true })) - Number(this.db.pragma('freelist_count', { simple: true }));
    return { rows, bytes: pages * Number(this.db.pragma('page_size', { simple: true })) };
  }
}
