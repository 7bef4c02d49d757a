/**
 * NYSE trading calendar, computed from the exchange's holiday rules (checked against the published
 * calendars 2019..2030). Dates are `YYYY-MM-DD` strings in UTC; nothing here reads the clock.
 *
 * Rules: New Year's Day (Sunday → Monday; a Saturday New Year's Day is not observed, per NYSE
 * Rule 7.2), Martin Luther King Jr. Day, Washington's Birthday, Good Friday, Memorial Day,
 * Juneteenth (from 2022), Independence Day, Labor Day, Thanksgiving, Christmas; fixed-date holidays
 * falling on a Saturday close the Friday before, on a Sunday the Monday after. Plus unscheduled
 * closures listed in SPECIAL_CLOSURES.
 */

const DAY_MS = 86_400_000;

/** Unscheduled full-day closures (national days of mourning) inside the supported range. */
const SPECIAL_CLOSURES: readonly string[] = [
  '2025-01-09', // President Jimmy Carter
];

/**
 * Whether year-month-day names a real calendar day (2025-02-30 does not; years 0-99 are themselves,
 * not 1900-1999 as `Date.UTC` reads them).
 */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  return d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

const DATE_STRING = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Whether `text` is a date `YYYY-MM-DD` naming a real calendar day: what every date the service is given must be. */
export function isDateString(text: string): boolean {
  const m = DATE_STRING.exec(text);
  return m !== null && isCalendarDate(Number(m[1]), Number(m[2]), Number(m[3]));
}

function parse(date: string): number {
  // Hand-rolled (no regex, no toISOString round trip): the demo generator calls this millions of times.
  if (date.length !== 10 || date.charCodeAt(4) !== 45 || date.charCodeAt(7) !== 45) {
    throw new RangeError(`not a YYYY-MM-DD date: ${date}`);
  }
  const y = digits(date, 0, 4);
  const m = digits(date, 5, 7);
  const d = digits(date, 8, 10);
  const ms = Date.UTC(y, m - 1, d);
  const check = new Date(ms);
  if (y < 1000 || check.getUTCMonth() !== m - 1 || check.getUTCDate() !== d) {
    throw new RangeError(`not a calendar date: ${date}`);
  }
  return ms;
}

function digits(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) throw new RangeError(`not a YYYY-MM-DD date: ${s}`);
    n = n * 10 + c;
  }
  return n;
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/** `YYYY-MM-DD` of a Date, in UTC (years 1000..9999). */
export function toDateString(d: Date): string {
  return `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
}

/** The date `n` calendar days after `date` (negative n goes back). */
export function addDays(date: string, n: number): string {
  return toDateString(new Date(parse(date) + n * DAY_MS));
}

/** 0 = Sunday … 6 = Saturday. */
export function dayOfWeek(date: string): number {
  return new Date(parse(date)).getUTCDay();
}

function ymd(year: number, month: number, day: number): string {
  return toDateString(new Date(Date.UTC(year, month - 1, day)));
}

/** The n-th (1-based) given weekday of a month; n = -1 is the last one. */
function nthWeekday(year: number, month: number, weekday: number, n: number): string {
  if (n > 0) {
    const firstDow = new Date(Date.UTC(year, month - 1, 1)).getUTCDay();
    return ymd(year, month, 1 + ((weekday - firstDow + 7) % 7) + (n - 1) * 7);
  }
  const last = new Date(Date.UTC(year, month, 0));
  const lastDow = last.getUTCDay();
  return ymd(year, month, last.getUTCDate() - ((lastDow - weekday + 7) % 7));
}

/** Easter Sunday (Gregorian), anonymous algorithm (Meeus/Jones/Butcher). */
export function easterSunday(year: number): string {
  const a = year % 19;
  const b = Math.floor(year / 100);
  const c = year % 100;
  const d = Math.floor(b / 4);
  const e = b % 4;
  const f = Math.floor((b + 8) / 25);
  const g = Math.floor((b - f + 1) / 3);
  const h = (19 * a + b - d - g + 15) % 30;
  const i = Math.floor(c / 4);
  const k = c % 4;
  const l = (32 + 2 * e + 2 * i - h - k) % 7;
  const m = Math.floor((a + 11 * h + 22 * l) / 451);
  const month = Math.floor((h + l - 7 * m + 114) / 31);
  const day = ((h + l - 7 * m + 114) % 31) + 1;
  return ymd(year, month, day);
}

/** Saturday → Friday before, Sunday → Monday after. */
function observed(date: string): string {
  const dow = dayOfWeek(date);
  if (dow === 6) return addDays(date, -1);
  if (dow === 0) return addDays(date, 1);
  return date;
}

/** Full-day NYSE closures of a year (weekdays only), sorted. */
export function nyseHolidays(year: number): string[] {
  const days: string[] = [];
  const newYear = ymd(year, 1, 1);
  // A Saturday New Year's Day is not observed on the Friday before (that Friday is in the old year).
  if (dayOfWeek(newYear) !== 6) days.push(observed(newYear));
  days.push(nthWeekday(year, 1, 1, 3)); // Martin Luther King Jr. Day
  days.push(nthWeekday(year, 2, 1, 3)); // Washington's Birthday
  days.push(addDays(easterSunday(year), -2)); // Good Friday
  days.push(nthWeekday(year, 5, 1, -1)); // Memorial Day
  if (year >= 2022) days.push(observed(ymd(year, 6, 19))); // Juneteenth
  days.push(observed(ymd(year, 7, 4)));
  days.push(nthWeekday(year, 9, 1, 1)); // Labor Day
  days.push(nthWeekday(year, 11, 4, 4)); // Thanksgiving
  days.push(observed(ymd(year, 12, 25)));
  for (const special of SPECIAL_CLOSURES) if (special.startsWith(`${year}-`)) days.push(special);
  return days.sort();
}

/** True when `date` is a NYSE holiday (a weekday on which the exchange is closed). */
export function isHoliday(date: string): boolean {
  return nyseHolidays(Number(date.slice(0, 4))).includes(date);
}

/** True when the NYSE is open on `date` (weekday, not a holiday). */
export function isTradingDay(date: string): boolean {
  const dow = dayOfWeek(date);
  return dow !== 0 && dow !== 6 && !isHoliday(date);
}

/** Trading days from `start` to `end`, both inclusive, ascending; [] when start > end. */
export function tradingDaysBetween(start: string, end: string): string[] {
  const from = parse(start);
  const to = parse(end);
  const out: string[] = [];
  let year = -1;
  let holidays = new Set<string>();
  for (let t = from; t <= to; t += DAY_MS) {
    const d = new Date(t);
    const dow = d.getUTCDay();
    if (dow === 0 || dow === 6) continue;
    if (d.getUTCFullYear() !== year) {
      year = d.getUTCFullYear();
      holidays = new Set(nyseHolidays(year));
    }
    const date = toDateString(d);
    if (!holidays.has(date)) out.push(date);
  }
  return out;
}

/** The first trading day strictly after `date`. */
export function nextTradingDay(date: string): string {
  let d = addDays(date, 1);
  while (!isTradingDay(d)) d = addDays(d, 1);
  return d;
}

/** The last trading day strictly before `date`. */
export function previousTradingDay(date: string): string {
  let d = addDays(date, -1);
  while (!isTradingDay(d)) d = addDays(d, -1);
  return d;
}
