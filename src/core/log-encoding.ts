import type { EventCodec } from './event-store.port.js';

type Data = Record<string, unknown>;
type Columns = readonly unknown[][];

interface TableSpec {
  /** The data's key holding the rows. */
  rows: string;
  fields: readonly string[];
  /** Row `i` of the columns (in `fields` order), built as one literal: every row shares one shape. */
  row(c: Columns, i: number): Data;
}

const SCORE_FIELDS = ['ticker', 'main_street', 'wall_street', 'service_score', 'estimated'] as const;
const scoreRow = (c: Columns, i: number): Data => ({
  ticker: c[0]![i],
  main_street: c[1]![i],
  wall_street: c[2]![i],
  service_score: c[3]![i],
  estimated: c[4]![i],
});

const TABLES: Readonly<Record<string, TableSpec>> = {
  ScoresPublished: { rows: 'rows', fields: SCORE_FIELDS, row: scoreRow },
  ScoresRestated: { rows: 'rows', fields: SCORE_FIELDS, row: scoreRow },
  ClosePricesRecorded: { rows: 'closes', fields: ['ticker', 'close'], row: (c, i) => ({ ticker: c[0]![i], close: c[1]![i] }) },
  WebVisitsRecorded: { rows: 'visits', fields: ['ticker', 'visits'], row: (c, i) => ({ ticker: c[0]![i], visits: c[1]![i] }) },
};

type Table = Record<string, unknown[]>;

const isObject = (v: unknown): v is Data => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The rows as columns, or null when a row is not an object with exactly these fields in this order. */
function toTable(rows: unknown, fields: readonly string[]): Table | null {
  if (!Array.isArray(rows) || rows.length === 0) return null;
  const table: Table = {};
  for (const f of fields) table[f] = new Array<unknown>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row: unknown = rows[i];
    if (!isObject(row)) return null;
    const keys = Object.keys(row);
    if (keys.length !== fields.length) return null;
    for (let f = 0; f < fields.length; f++) {
      const v = row[fields[f]!];
      if (keys[f] !== fields[f] || v === undefined) return null;
      table[fields[f]!]![i] = v;
    }
  }
  return table;
}

function toRows(table: unknown, spec: TableSpec): Data[] | null {
  if (!isObject(table)) return null;
  const columns = spec.fields.map((f) => table[f]);
  const first = columns[0];
  if (!Array.isArray(first) || columns.some((c) => !Array.isArray(c) || c.length !== first.length)) return null;
  const rows = new Array<Data>(first.length);
  for (let i = 0; i < rows.length; i++) rows[i] = spec.row(columns as unknown[][], i);
  return rows;
}

/** `data` with its `key` replaced by `value`, in the same place among its keys. */
function replaceKey(data: Data, key: string, newKey: string, value: unknown): Data {
  const out: Data = {};
  for (const k of Object.keys(data)) {
    if (k === key) out[newKey] = value;
    else out[k] = data[k];
  }
  return out;
}

/**
 * The log's encoding of the bulk events: a day's published or restated scores, closing prices
 * and web visits. Their rows are stored as a table, one array per field, instead of an object
 * per row:
 *
 *   {"date":"2024-01-02","closes":[{"ticker":"AAPL","close":185.6},{"ticker":"MSFT","close":370.9}]}
 *   {"date":"2024-01-02","table":{"ticker":["AAPL","MSFT"],"close":[185.6,370.9]}}
 *
 * The rows' field names are written once per event instead of once per row: a demo log is a
 * third of the size, and parsing it (what a rebuild of the read models spends most on) takes
 * 0.7 s instead of 2 s. Readers never see the table: the event store decodes it back into the
 * rows, with the same fields in the same order. Events whose rows a table would not give back
 * exactly (a field more or less, another order, none at all) and events written before this
 * encoding are stored and read as they are.
 */
export const logEncoding: EventCodec = {
  encode(type, data) {
    const spec = TABLES[type];
    if (!spec || !isObject(data) || 'table' in data) return data;
    const table = toTable(data[spec.rows], spec.fields);
    return table ? replaceKey(data, spec.rows, 'table', table) : data;
  },
  decode(type, data) {
    const spec = TABLES[type];
    if (!spec || !isObject(data) || !('table' in data) || spec.rows in data) return data;
    const rows = toRows(data['table'], spec);
    if (!rows) throw new Error(`${type}: malformed table in the log`);
    return replaceKey(data, 'table', spec.rows, rows);
  },
};
