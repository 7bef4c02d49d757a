/**
 * Dates and instants as a reader reads them (`1 Dec 2026, 00:00 UTC`), each in a `<time>` whose
 * `datetime` carries the exact value and whose `title` shows it on hover. Written from the UTC
 * fields, not the locale's: a page reads the same on every server.
 */
import { html, type SafeHtml } from './html.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/** `2026-12-01T00:00:00.000Z` → `1 Dec 2026, 00:00 UTC` (the text of `instant`). */
export function readableInstant(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${readableDay(d)}, ${two(d.getUTCHours())}:${two(d.getUTCMinutes())} UTC`;
}

function readableDay(d: Date): string {
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
}

/** An ISO instant in a `<time>`: readable text, the UTC instant in `datetime` and `title`. */
export function instant(iso: string): SafeHtml {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return html`${iso}`;
  const exact = d.toISOString();
  return html`<time datetime="${exact}" title="${exact}">${readableInstant(exact)}</time>`;
}

/** A `YYYY-MM-DD` day (UTC) in a `<time>`: `3 Nov 2026`. */
export function day(date: string): SafeHtml {
  const d = new Date(`${date}T00:00:00Z`);
  if (Number.isNaN(d.getTime())) return html`${date}`;
  return html`<time datetime="${date}" title="${date} (UTC)">${readableDay(d)}</time>`;
}
