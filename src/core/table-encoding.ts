import type { EventCodec } from './event-store.port.js';

export type Data = Record<string, unknown>;
export type Columns = readonly unknown[][];

/** How one event type's rows are laid out as a table (a feature gives the layout of its own events). */
export interface TableSpec {
  /** The data's key holding the rows. */
  rows: string;
  fields: readonly string[];
  /** Row `i` of the columns (in `fields` order), built as one literal: every row shares one shape. */
  row(c: Columns, i: number): Data;
}

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
 * An event codec that stores the rows of the event types in `tables` as a table, one array per
 * field, instead of an object per row:
 *
 *   {"date":"2024-01-02","closes":[{"ticker":"AAPL","close":185.6},{"ticker":"MSFT","close":370.9}]}
 *   {"date":"2024-01-02","table":{"ticker":["AAPL","MSFT"],"close":[185.6,370.9]}}
 *
 * Readers never see the table: the event store decodes it back into the rows, with the same
 * fields in the same order. Events whose rows a table would not give back exactly (a field more
 * or less, another order, none at all) and events written before the encoding are stored and read
 * as they are. The kernel knows no event's layout: the feature that owns the events gives it
 * (src/domain/scores/log-encoding.ts).
 */
export function tableEncoding(tables: Readonly<Record<string, TableSpec>>): EventCodec {
  return {
    encode(type, data) {
      const spec = tables[type];
      if (!spec || !isObject(data) || 'table' in data) return data;
      const table = toTable(data[spec.rows], spec.fields);
      return table ? replaceKey(data, spec.rows, 'table', table) : data;
    },
    decode(type, data) {
      const spec = tables[type];
      if (!spec || !isObject(data) || !('table' in data) || spec.rows in data) return data;
      const rows = toRows(data['table'], spec);
      if (!rows) throw new Error(`${type}: malformed table in the log`);
      return replaceKey(data, 'table', spec.rows, rows);
    },
  };
}
