import { badRequest } from '../../src/core/errors.js';
import { readInstant } from '../../src/domain/instants.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;
/** The service's own timestamp form (`restated_at`): UTC by definition, so it needs no zone. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
/** An offset whose `+` arrived as a space (an unencoded `+` in a query string). */
const SPACED_OFFSET = /^(\d{4}-\d{2}-\d{2}T[\d:.]+) (\d{2}:?\d{2})$/i;

/** A real calendar date as a regular expression (years 0000-9999, proleptic Gregorian, as readInstant reads them). */
const MONTH_DAY = '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))';
const LEAP_YEAR = '(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';
const CALENDAR_DATE = `(?:[0-9]{4}-${MONTH_DAY}|${LEAP_YEAR}-02-29)`;
/** A time of day; second 60 is a leap second, which readInstant takes. */
const CLOCK = '(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)';

/**
 * What `parseInstantParam` reads, as the OpenAPI document declares it (`as_known_at`): a date, an
 * RFC 3339 date-time, or a `restated_at` timestamp. A client that validates its input against the
 * document sends each of them. The timestamp's pattern admits real dates and times only (not
 * `0000-00-00 00:00:00`), so that what the document admits, the service accepts.
 */
export const INSTANT_PARAM_SCHEMA = {
  type: 'string',
  anyOf: [{ format: 'date' }, { format: 'date-time' }, { pattern: `^${CALENDAR_DATE} ${CLOCK}$` }],
} as const;

/** An instant a body names (a resend's `since`): an RFC 3339 date-time, or a `YYYY-MM-DD HH:MM:SS` timestamp (UTC); no bare date. */
export const INSTANT_BODY_SCHEMA = {
  type: 'string',
  anyOf: [{ type: 'string', format: 'date-time' }, { type: 'string', pattern: `^${CALENDAR_DATE} ${CLOCK}$` }],
} as const;

/**
 * An instant query parameter (`since`, `as_known_at`) as a canonical ISO string
 * (`toISOString()` form, the form the read models store), or undefined when absent.
 *
 * Accepted: a date `YYYY-MM-DD` (00:00:00 UTC that day); the service's own timestamp form
 * `YYYY-MM-DD HH:MM:SS` (the `restated_at` format, UTC), so a client can send back the latest
 * `restated_at` it holds; and an ISO 8601 instant with a zone, read by the kernel's one parser
 * (`readInstant`, which `SCORES_NOW` uses too): a zone-less `2024-03-01T00:00:00` is refused,
 * with the same reason, in both places.
 */
export function parseInstantParam(
  name: string,
  value: string | undefined,
  /** A finer value than the millisecond is rounded `up` for a lower bound such as `since`, `down` for an upper bound such as `as_known_at`. */
  round: 'up' | 'down' = 'down',
): string | undefined {
  // An empty value is no instant: refused like any other (the document admits none), not read as absent.
  if (value === undefined) return undefined;
  const text = value.trim();
  const reading = DATE.test(text)
    ? readInstant(`${text}T00:00:00Z`)
    : TIMESTAMP.test(text)
      ? readInstant(`${text}Z`)
      : readInstant(text.replace(SPACED_OFFSET, '$1+$2'), round);
  if (reading.ok) return reading.iso;
  const expected = `a date YYYY-MM-DD, a restated_at value YYYY-MM-DD HH:MM:SS (UTC), or ${reading.reason}`;
  throw badRequest(`${name} must be ${expected}`, { errors: [{ parameter: name, message: `must be ${expected}` }] });
}

