import { badRequest } from '../../src/core/errors.js';
import { isCalendarDate } from '../../src/domain/trading-calendar.js';

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2}| \d{2}:?\d{2})?)?$/i;

/**
 * An instant query parameter (`since`, `as_known_at`) as a canonical ISO string
 * (`toISOString()` form, the form the read models store), or undefined when absent.
 *
 * Accepted: a date `YYYY-MM-DD` (00:00:00 UTC that day); an ISO 8601 instant
 * `YYYY-MM-DDTHH:MM[:SS[.fff]]` with `Z` or an offset; and the service's own timestamp form
 * `YYYY-MM-DD HH:MM:SS` (the `restated_at` format, UTC), so a client can send back the
 * latest `restated_at` it holds. A time without an offset is UTC. An offset whose `+` arrived as a
 * space (an unencoded `+` in a query string) is read as `+`.
 */
export function parseInstantParam(
  name: string,
  value: string | undefined,
  /**
   * Instants are kept to the millisecond. A finer value is rounded `up` for a lower bound such as
   * `since` (rows written at or after it: 46.0009 must not take a row of 46.000) and `down` for an
   * upper bound such as `as_known_at`.
   */
  round: 'up' | 'down' = 'down',
): string | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const refuse = () =>
    badRequest(`${name} must be a date YYYY-MM-DD or an ISO 8601 instant such as 2024-05-01T22:00:00Z`, {
      errors: [{ parameter: name, message: 'must be a date YYYY-MM-DD or an ISO 8601 instant' }],
    });
  const m = INSTANT.exec(value.trim());
  if (!m) throw refuse();
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (hour > 23 || minute > 59 || second > 59) throw refuse();
  if (!isCalendarDate(year, month, day)) throw refuse();
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const midnight = new Date(0).setUTCFullYear(year, month - 1, day);
  const finer = round === 'up' && /[1-9]/.test(frac.slice(3)) ? 1 : 0;
  const local = midnight + ((hour * 60 + minute) * 60 + second) * 1000 + Number(frac.slice(0, 3).padEnd(3, '0')) + finer;
  let offsetMinutes = 0;
  if (zone.toUpperCase() !== 'Z') {
    const z = /^([+\- ])(\d{2}):?(\d{2})$/.exec(zone)!;
    const [, sign, oh, om] = z;
    if (Number(oh) > 23 || Number(om) > 59) throw refuse();
    offsetMinutes = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  }
  const instant = new Date(local - offsetMinutes * 60_000);
  // An offset can carry 9999-12-31T23:59-00:01 into year 10000, whose ISO form (+010000-…) no
  // longer sorts with the stored instants.
  if (Number.isNaN(instant.getTime()) || instant.getUTCFullYear() < 0 || instant.getUTCFullYear() > 9999) throw refuse();
  return instant.toISOString();
}

/** `YYYY-MM-DD HH:MM:SS` (UTC) of an ISO instant: the spec's timestamp format (`restated_at`). */
export function timestampOf(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}
