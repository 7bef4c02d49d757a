/**
 * The event log's tables and statements, for one schema.
 *
 * `events` holds every event. `log` is one row: how this log orders its events (`positions`).
 * A call charged alone is an `events` row with its `record` (src/domain/ledger/debit-record.ts, as bytes:
 * debit-record-bytes.ts) instead of an id, JSON data and metadata; the (stream, revision) index
 * stays the one every append is checked by.
 */

/** How a log orders its events; fixed when the log is created (docs/architecture.md compares the two). */
export type PositionMode = 'serialised' | 'fenced';

export function eventLogDdl(schema: string): string {
  return `
    CREATE SCHEMA IF NOT EXISTS ${schema};
    CREATE TABLE IF NOT EXISTS ${schema}.events (
      position    bigint  NOT NULL PRIMARY KEY,
      tx          xid8    NOT NULL DEFAULT pg_current_xact_id(),
      stream_id   text    NOT NULL,
      revision    integer NOT NULL,
      id          text    NOT NULL UNIQUE,
      type        text    NOT NULL,
      data        json    NOT NULL,
      metadata    json    NOT NULL,
      recorded_at timestamptz NOT NULL,
      CONSTRAINT events_stream_revision UNIQUE (stream_id, revision)
    );
    ALTER TABLE ${schema}.events ADD COLUMN IF NOT EXISTS record bytea;
    ALTER TABLE ${schema}.events ALTER COLUMN id DROP NOT NULL, ALTER COLUMN data DROP NOT NULL, ALTER COLUMN metadata DROP NOT NULL;
    CREATE SEQUENCE IF NOT EXISTS ${schema}.event_position;
    CREATE TABLE IF NOT EXISTS ${schema}.log (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      positions text    NOT NULL CHECK (positions IN ('serialised', 'fenced'))
    );`;
}

/** What only a fenced log needs: reads in (transaction, position) order. */
export function fencedDdl(schema: string): string {
  return `CREATE INDEX IF NOT EXISTS events_tx_position ON ${schema}.events (tx, position);`;
}

/** Columns of a read, with the instant as the port's ISO text (sessions run in UTC). */
const COLUMNS = `position, tx::text AS tx, id, stream_id, revision, type, data, metadata, record,
  to_char(recorded_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at`;

/** COLUMNS with the data of the event types in parameter `$n` only (a subscriber's `dataTypes`). */
const columnsFor = (n: number) =>
  COLUMNS.replace('data, metadata, record', `CASE WHEN type = ANY($${n}::text[]) THEN data END AS data, metadata, CASE WHEN type = ANY($${n}::text[]) THEN record END AS record`);

/**
 * Only transactions older than every transaction still running are certain never to be followed
 * by an earlier one: reads of a fenced log stop below the oldest running transaction id.
 */
const FENCE = 'e.tx < pg_snapshot_xmin(pg_current_snapshot())';

const APPEND_LOCK = (schema: string) => `hashtext('scores.event-log.appends.${schema}')`;

export function statements(schema: string) {
  const channel = `${schema}_events`;
  return {
    /** Appends notify it; subscriptions LISTEN on it. */
    channel,
    /** One index probe per stream: the revision of its last event (null for a new stream). */
    streamHeads: `SELECT s.stream_id,
        (SELECT e.revision FROM ${schema}.events e WHERE e.stream_id = s.stream_id ORDER BY e.revision DESC LIMIT 1) AS revision
      FROM unnest($1::text[]) AS s(stream_id)`,
    /**
     * A group commit in one statement, so in one round trip and one transaction: the rows in the
     * order of the arrays, numbered by the sequence, and the notification (sent at commit). In a
     * serialised log the statement first takes the append lock, which it holds until it has
     * committed: numbers are drawn under it (`+ l.zero` makes each draw wait for it), so they
     * become visible in the order they were drawn. A fenced log takes the same lock shared: appends
     * run side by side, and a commit with conditions (`lockAppends`) waits until they committed.
     *
     * `$9`/`$10` name events that must be there (a stream and a revision each): when one is
     * missing nothing is inserted and no row comes back. A writer that trusts its expected revision
     * appends without reading the heads first; this refuses a revision beyond the stream's end
     * (a gap), and the unique (stream, revision) index one already taken.
     */
    append: (mode: PositionMode) => `
      WITH l AS MATERIALIZED (SELECT ${mode === 'serialised' ? 'pg_advisory_xact_lock' : 'pg_advisory_xact_lock_shared'}(${APPEND_LOCK(schema)}) AS locked, 0 AS zero),
      g AS MATERIALIZED (
        SELECT count(*) AS missing FROM unnest($9::text[], $10::int[]) AS h(stream_id, revision)
        WHERE NOT EXISTS (SELECT 1 FROM ${schema}.events e WHERE e.stream_id = h.stream_id AND e.revision = h.revision)
      ),
      written AS (
        INSERT INTO ${schema}.events (position, stream_id, revision, id, type, data, metadata, record, recorded_at)
        SELECT nextval('${schema}.event_position') + l.zero, u.stream_id, u.revision, u.id, u.type, u.data, u.metadata, u.record, $7
        FROM l, g, unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::json[], $6::json[], $8::bytea[])
          AS u(stream_id, revision, id, type, data, metadata, record)
        WHERE g.missing = 0
        RETURNING stream_id, revision, position, tx
      ),
      notified AS (SELECT pg_notify('${channel}', '') AS sent)
      SELECT w.stream_id, w.revision, w.position, w.tx::text AS tx FROM written w, notified`,
    /**
     * Taken first by a commit that checks a stream it does not write (a condition): every append
     * holds this lock until it commits, so once it is granted, the next statement reads every
     * stream's last revision as it stays until this commit (held until the transaction ends).
     */
    lockAppends: `SELECT pg_advisory_xact_lock(${APPEND_LOCK(schema)})`,
    readStream: `SELECT ${COLUMNS} FROM ${schema}.events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision LIMIT $3`,
    readAllSerialised: `SELECT ${COLUMNS} FROM ${schema}.events WHERE position > $1 ORDER BY position LIMIT $2`,
    // `e.tx`, not `tx`: in ORDER BY a bare name is the output column, the transaction id as text.
    readAllFenced: `SELECT ${COLUMNS} FROM ${schema}.events e
      WHERE (e.tx, e.position) > ($1::xid8, $2::bigint) AND ${FENCE} ORDER BY e.tx, e.position LIMIT $3`,
    readAllSerialisedFor: `SELECT ${columnsFor(3)} FROM ${schema}.events WHERE position > $1 ORDER BY position LIMIT $2`,
    readAllFencedFor: `SELECT ${columnsFor(4)} FROM ${schema}.events e
      WHERE (e.tx, e.position) > ($1::xid8, $2::bigint) AND ${FENCE} ORDER BY e.tx, e.position LIMIT $3`,
    headSerialised: `SELECT max(position) AS position FROM ${schema}.events`,
    headFenced: `SELECT e.tx::text AS tx, e.position FROM ${schema}.events e WHERE ${FENCE} ORDER BY e.tx DESC, e.position DESC LIMIT 1`,
  };
}

/** A row as the statements above read it (bigints as text). */
export interface EventRow {
  position: string;
  tx: string;
  /** Null for a debit record (its data is in `record`). */
  id: string | null;
  stream_id: string;
  revision: number;
  type: string;
  data: unknown;
  metadata: Record<string, unknown> | null;
  record: Buffer | null;
  recorded_at: string;
}
