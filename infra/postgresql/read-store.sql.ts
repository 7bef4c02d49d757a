import type { CollectionDef, FieldCondition, Scalar } from '../../src/core/read-store.port.js';

type AnyDef = CollectionDef<any>;

/** A name the adapter puts in its SQL text, always quoted. */
export const IDENT = /^[a-z][a-z0-9_]*$/i;

export const quote = (name: string): string => `"${name}"`;
export const fieldColumn = (field: string): string => quote(`f_${field}`);

/**
 * A queryable field's value as its column holds it: one `text COLLATE "C"` column for every kind of
 * scalar, encoded so that byte order is the embedded store's order (SQLite: null first, then
 * numbers by value, then strings by their UTF-8 bytes; booleans are the numbers 0 and 1 there).
 * Null is SQL NULL; a number is `n` and the 16 hex digits of its IEEE-754 bits, sign-flipped so
 * that they sort as the numbers do; a string is `s` and the string. One column and one index per
 * field whatever its type, and the order does not depend on the database's collation.
 */
export function encodeKey(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return `s${value}`;
  if (typeof value === 'boolean') return encodeNumber(value ? 1 : 0);
  if (typeof value === 'number') return Number.isFinite(value) ? encodeNumber(value) : null;
  return null;
}

const bits = Buffer.alloc(8);

function encodeNumber(n: number): string {
  bits.writeDoubleBE(n === 0 ? 0 : n); // -0 is 0
  if (bits[0]! & 0x80) for (let i = 0; i < 8; i++) bits[i] = ~bits[i]! & 0xff;
  else bits[0] = bits[0]! ^ 0x80;
  return `n${bits.toString('hex')}`;
}

export function assertField(def: AnyDef, field: string): void {
  if (!def.fields.includes(field)) throw new Error(`collection ${def.name}: field ${field} is not declared queryable`);
}

/** SQL text and its parameters, built up clause by clause. */
export class Where {
  readonly parts: string[] = [];
  readonly params: unknown[] = [];

  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  toString(): string {
    return this.parts.length ? ` WHERE ${this.parts.join(' AND ')}` : '';
  }
}

/** The comparisons the port's operators stand for; `IS NOT DISTINCT FROM` compares null as a value, as MongoDB and the embedded store do. */
const OPERATORS: [Exclude<keyof Exclude<FieldCondition, Scalar>, '$in'>, string][] = [
  ['$eq', 'IS NOT DISTINCT FROM'],
  ['$ne', 'IS DISTINCT FROM'],
  ['$gt', '>'],
  ['$gte', '>='],
  ['$lt', '<'],
  ['$lte', '<='],
];

export function whereClause(def: AnyDef, filter: Record<string, FieldCondition | undefined>): Where {
  const where = new Where();
  for (const [field, cond] of Object.entries(filter)) {
    if (cond === undefined) continue;
    assertField(def, field);
    const c = fieldColumn(field);
    if (cond === null || typeof cond !== 'object') {
      where.parts.push(cond === null ? `${c} IS NULL` : `${c} = ${where.param(encodeKey(cond))}`);
      continue;
    }
    for (const [op, sql] of OPERATORS) {
      if (cond[op] !== undefined) where.parts.push(`${c} ${sql} ${where.param(encodeKey(cond[op]))}`);
    }
    if (cond.$in) where.parts.push(inClause(where, c, cond.$in));
  }
  return where;
}

function inClause(where: Where, column: string, values: Scalar[]): string {
  const present = values.filter((v) => v !== null);
  const alts: string[] = [];
  if (present.length) alts.push(`${column} = ANY(${where.param(present.map(encodeKey))}::text[])`);
  if (present.length !== values.length) alts.push(`${column} IS NULL`);
  return alts.length ? `(${alts.join(' OR ')})` : 'false';
}

/**
 * Rows strictly after the cursor's values in the sort order (keyset pagination), nulls first
 * ascending and last descending, as the embedded store sorts them.
 */
export function keysetAfter(where: Where, sort: readonly [string, 1 | -1][], values: readonly (string | null)[]): void {
  const ors: string[] = [];
  for (let k = 0; k < sort.length; k++) {
    const [c, dir] = sort[k]!;
    const v = values[k] ?? null;
    let beyond: string;
    if (dir === 1) beyond = v === null ? `${c} IS NOT NULL` : `${c} > ${where.param(v)}`;
    else if (v === null) continue;
    else beyond = `(${c} < ${where.param(v)} OR ${c} IS NULL)`;
    const equal = sort.slice(0, k).map(([col], j) => `${col} IS NOT DISTINCT FROM ${where.param(values[j] ?? null)}`);
    ors.push(`(${[...equal, beyond].join(' AND ')})`);
  }
  where.parts.push(ors.length ? `(${ors.join(' OR ')})` : 'false');
}

export const orderBy = (sort: readonly [string, 1 | -1][]): string =>
  sort.map(([c, d]) => (d === 1 ? `${c} ASC NULLS FIRST` : `${c} DESC NULLS LAST`)).join(', ');
