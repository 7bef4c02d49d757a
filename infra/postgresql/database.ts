import pg from 'pg';

/** The SQLSTATE of a unique-constraint violation. */
export const UNIQUE_VIOLATION = '23505';

/** A schema name the adapter puts in its SQL text: letters, digits and underscores only. */
export function checkSchemaName(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`not a usable PostgreSQL schema name: ${JSON.stringify(schema)}`);
  return schema;
}

/**
 * A pool on the server a `postgres://` URL names. Every session works in UTC, so that the text
 * forms of instants the adapters read are the same whatever the server's own zone.
 */
export function openPool(url: string, options: { max?: number; applicationName?: string; settings?: Record<string, string> } = {}): pg.Pool {
  const settings = { TimeZone: 'UTC', ...options.settings };
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 8,
    application_name: options.applicationName ?? 'scores',
    options: Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`).join(' '),
  });
  // An idle client that loses its connection emits on the pool; without a listener the process
  // would crash. The next checkout opens a new connection.
  pool.on('error', () => undefined);
  return pool;
}

/** One connection outside any pool, for LISTEN (a pooled client may be handed to anyone). */
export async function openClient(url: string, applicationName = 'scores'): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName, options: '-c TimeZone=UTC' });
  await client.connect();
  return client;
}

export interface PgSession {
  query<Row extends Record<string, unknown> = Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>;
  end(): Promise<void>;
}

/**
 * A single connection for administration: creating a database or a schema for a test run,
 * holding a lock while a test watches what waits behind it. Tools and tests use it so that they
 * never import the driver themselves.
 */
export async function pgSession(url: string): Promise<PgSession> {
  const client = await openClient(url, 'scores-admin');
  client.on('error', () => undefined);
  return {
    query: async <Row extends Record<string, unknown>>(text: string, params?: unknown[]) =>
      (await client.query<Row>(text, params)).rows,
    end: () => client.end(),
  };
}

/** `url` with its database replaced by `database` (a test or bench run's own database). */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

/**
 * Compresses `column`'s large values with LZ4 instead of PostgreSQL's default pglz: events and
 * read-model documents of several kilobytes are compressed on every write, and LZ4 took a half to a
 * third of the time of pglz on the demo's documents. Needs PostgreSQL 14 built with LZ4 (Debian's
 * is); elsewhere the default stays. Set once: later starts see it set and take no lock.
 */
export async function preferLz4(db: Pick<pg.ClientBase, 'query'>, table: string, column: string): Promise<void> {
  try {
    const { rows } = await db.query<{ c: string }>('SELECT attcompression AS c FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2', [table, column]);
    if (rows[0] && rows[0].c !== 'l') await db.query(`ALTER TABLE ${table} ALTER COLUMN ${column} SET COMPRESSION lz4`);
  } catch {
    // PostgreSQL 13 (no attcompression) or a server built without LZ4: pglz it is.
  }
}
