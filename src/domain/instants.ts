import { isCalendarDate } from './trading-calendar.js';

/**
 * The one reader of the instants the service is given: `SCORES_NOW` (src/app/config.ts) and the
 * `since` and `as_known_at` query parameters (queries/shared/instants.ts, which adds the forms
 * only a query takes: a bare date, the service's own `restated_at` timestamp).
 *
 * An instant is RFC 3339 / ISO 8601: a real calendar date, `T` (or a space), `HH:MM[:SS[.f…]]`,
 * and a zone, `Z` or an offset `±HH:MM` (`±HHMM`, `±HH`). Every RFC 3339 `date-time` is read (the
 * OpenAPI document declares the query parameters so), a leap second `:60` as the last millisecond
 * of its minute, or the next minute for a lower bound (a Date has no leap seconds). A time
 * without a zone is refused: read as UTC here and in the host's zone elsewhere (`Date.parse`),
 * the same text would name two instants.
 */
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/** What every refusal says first: the form expected, with an example. */
const INSTANT_FORM = 'an ISO 8601 instant with a zone, e.g. 2024-03-15T12:00:00Z';

export type InstantReading =
  /** `iso`: the instant in `toISOString()` form (milliseconds, UTC), the form the read models store. */
  | { ok: true; iso: string }
  /** `reason`: why the text is refused, to follow a sentence such as "SCORES_NOW must be …". */
  | { ok: false; reason: string };

/**
 * Reads an instant, kept to the millisecond: a finer fraction is rounded `down` (the default), or
 * `up` for a lower bound (`since`: 46.0009 must not take a row written at 46.000).
 */
export function readInstant(text: string, round: 'up' | 'down' = 'down'): InstantReading {
  const refused = (why?: string): InstantReading => ({ ok: false, reason: why ? `${INSTANT_FORM}: ${why}` : INSTANT_FORM });
  const m = INSTANT.exec(text);
  if (!m) return refused();
  const [, y, mo, d, h, mi, s = '00', frac = '', zone] = m as unknown as [string, string, string, string, string, string, string?, string?, string?];
  if (zone === undefined) return refused(`${text} has no zone (add Z for UTC, or an offset such as +01:00)`);
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  if (hour > 23 || minute > 59 || second > 60 || !isCalendarDate(year, month, day)) return refused();
  let offsetMinutes = 0;
  if (zone.toUpperCase() !== 'Z') {
    const [, sign, oh, om = '00'] = /^([+-])(\d{2})(?::?(\d{2}))?$/.exec(zone)!;
    if (Number(oh) > 23 || Number(om) > 59) return refused();
    offsetMinutes = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  }
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const midnight = new Date(0).setUTCFullYear(year, month - 1, day);
  const finer = round === 'up' && /[1-9]/.test(frac.slice(3)) ? 1 : 0;
  // A leap second lies between the minute's last millisecond and the next minute.
  const leap = round === 'up' ? 60_000 : 59_999;
  const millis = second === 60 ? leap : second * 1000 + Number(frac.slice(0, 3).padEnd(3, '0')) + finer;
  const local = midnight + (hour * 60 + minute) * 60_000 + millis;
  const instant = new Date(local - offsetMinutes * 60_000);
  // An offset can carry 9999-12-31T23:59-00:01 into year 10000, whose ISO form (+010000-…) no
  // longer sorts with the stored instants.
  if (Number.isNaN(instant.getTime()) || instant.getUTCFullYear() < 0 || instant.getUTCFullYear() > 9999) return refused();
  return { ok: true, iso: instant.toISOString() };
}
