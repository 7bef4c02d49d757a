/**
 * The event log's tables and statements, for one schema.
 *
 * `events` holds every event. `log` is one row: how this log orders its events (`positions`).
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
    CREATE TABLE IF NOT EXISTS ${schema}.log (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      positions text    NOT NULL CHECK (positions IN ('serialised', 'fenced'))
    );`;
}

/** What only a fenced log needs: positions from a sequence, read in (transaction, position) order. */
export function fencedDdl(schema: string): string {
  return `
    CREATE SEQUENCE IF NOT EXISTS ${schema}.event_position;
    CREATE INDEX IF NOT EXISTS events_tx_position ON ${schema}.events (tx, position);`;
}

/** Columns of a read, with the instant as the port's ISO text (sessions run in UTC). */
const COLUMNS = `position, tx::text AS tx, id, stream_id, revision, type, data, metadata,
  to_char(recorded_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at`;

/**
 * Only transactions older than every transaction still running are certain never to be followed
 * by an earlier one: reads of a fenced log stop below the oldest running transaction id.
 */
const FENCE = 'e.tx < pg_snapshot_xmin(pg_current_snapshot())';

export function statements(schema: string) {
  return {
    /**
     * Serialised: every append holds this lock until it has committed, so positions become
     * visible in the order they were given. Only then is the head read, by the next statement.
     */
    lockAppends: `SELECT pg_advisory_xact_lock(hashtext('scores.event-log.appends.${schema}'))`,
    /**
     * One index probe per stream: the revision of its last event (null for a new stream); and the
     * log's last position, which a serialised append numbers on from.
     */
    streamHeads: `SELECT s.stream_id,
        (SELECT e.revision FROM ${schema}.events e WHERE e.stream_id = s.stream_id ORDER BY e.revision DESC LIMIT 1) AS revision,
        (SELECT max(position) FROM ${schema}.events) AS last_position
      FROM unnest($1::text[]) AS s(stream_id)`,
    /** Serialised: positions given by the writer, which holds the head's lock. */
    insertNumbered: `INSERT INTO ${schema}.events (position, stream_id, revision, id, type, data, metadata, recorded_at)
      SELECT u.position, u.stream_id, u.revision, u.id, u.type, u.data, u.metadata, $8
      FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::text[], $6::json[], $7::json[])
        AS u(position, stream_id, revision, id, type, data, metadata)`,
    /** Fenced: positions from the sequence, in the order of the arrays (a function scan keeps it). */
    insertSequenced: `INSERT INTO ${schema}.events (position, stream_id, revision, id, type, data, metadata, recorded_at)
      SELECT nextval('${schema}.event_position'), u.stream_id, u.revision, u.id, u.type, u.data, u.metadata, $7
      FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::json[], $6::json[])
        AS u(stream_id, revision, id, type, data, metadata)
      RETURNING position, tx::text AS tx`,
    readStream: `SELECT ${COLUMNS} FROM ${schema}.events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision LIMIT $3`,
    readAllSerialised: `SELECT ${COLUMNS} FROM ${schema}.events WHERE position > $1 ORDER BY position LIMIT $2`,
    // `e.tx`, not `tx`: in ORDER BY a bare name is the output column, the transaction id as text.
    readAllFenced: `SELECT ${COLUMNS} FROM ${schema}.events e
      WHERE (e.tx, e.position) > ($1::xid8, $2::bigint) AND ${FENCE} ORDER BY e.tx, e.position LIMIT $3`,
    headSerialised: `SELECT max(position) AS position FROM ${schema}.events`,
    headFenced: `SELECT e.tx::text AS tx, e.position FROM ${schema}.events e WHERE ${FENCE} ORDER BY e.tx DESC, e.position DESC LIMIT 1`,
  };
}

/** A row as the statements above read it (bigints as text). */
export interface EventRow {
  position: string;
  tx: string;
  id: string;
  stream_id: string;
  revision: number;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  recorded_at: string;
}
