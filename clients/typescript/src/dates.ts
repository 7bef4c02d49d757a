/** A date parameter: `YYYY-MM-DD`, or a `Date` (its UTC calendar date; an instant parameter takes the whole instant). */
export type DateLike = string | Date;

/** How a parameter's `Date` is written: `date` (YYYY-MM-DD, UTC) or `instant` (ISO 8601, UTC). */
export type DateKind = 'date' | 'instant';

function written(name: string, value: unknown, kind: DateKind): unknown {
  if (!(value instanceof Date)) return value;
  if (Number.isNaN(value.getTime())) throw new RangeError(`${name}: an invalid Date`);
  const iso = value.toISOString();
  return kind === 'date' ? iso.slice(0, 10) : iso;
}

/**
 * A query as the API reads it: each `Date` of a date parameter written out, the unset members
 * left out. The generated methods call it with the parameters whose schema is a date.
 */
export function queryOf<T>(query: object, dates: Readonly<Record<string, DateKind>>): T {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    const kind = dates[name];
    out[name] = kind ? written(name, value, kind) : value;
  }
  return out as T;
}
