import { AppError } from '../../src/core/errors.js';
import { sha256Hex } from '../../src/core/sha256.js';

/**
 * The sync cursor of GET /v1/scores/history (`next_since`, sent back as `since`).
 *
 * A point `{ seq, end }` says what a client holds: every row written by the score events up to
 * write sequence `seq` (see ScoreHistoryHead) and dated up to `end`, the effective last date of
 * its window then. The next call returns the rows written after `seq` (new or restated) and the
 * rows that entered the window since (dated after `end`: the as-of date moved, as the free tier's
 * delay does every day), each once.
 *
 * A change set larger than one call returns is cut into pages: `page` pins the upper bound of the
 * set (`to`) and names the last row delivered (rows go by ticker, then date), and the next page
 * continues after it.
 */
export interface SyncPoint {
  seq: number;
  /** The window's effective last date (null: nothing was visible yet). */
  end: string | null;
}

export interface SyncCursor {
  from: SyncPoint;
  page?: { to: SyncPoint; ticker: string; date: string };
}

/** Every cursor starts with this: a plain `since` (a date or an instant) starts with a digit. */
const PREFIX = 'c1_';
const SEP = '~';
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const SEQ = /^(0|[1-9]\d{0,14})$/;
const TICKER = /^[A-Z0-9.-]{1,12}$/;

export const isSyncCursor = (since: string): boolean => since.startsWith(PREFIX);


/** The text of a cursor: opaque to clients (base64url), with a check so an altered one is refused, not misread. */
export function encodeSyncCursor(c: SyncCursor): string {
  const fields = [c.from.seq, c.from.end ?? ''];
  if (c.page) fields.push(c.page.to.seq, c.page.to.end ?? '', c.page.ticker, c.page.date);
  const body = fields.join(SEP);
  return PREFIX + Buffer.from(`${body}${SEP}${check(body)}`).toString('base64url');
}

/** A cursor this service made, or 400 `cursor_invalid`. */
export function decodeSyncCursor(text: string): SyncCursor {
  const fields = Buffer.from(text.slice(PREFIX.length), 'base64url').toString('utf8').split(SEP);
  const sum = fields.pop();
  const body = fields.join(SEP);
  const point = (seq: string | undefined, end: string | undefined): SyncPoint | null =>
    seq !== undefined && SEQ.test(seq) && end !== undefined && (end === '' || DATE.test(end)) ? { seq: Number(seq), end: end || null } : null;
  const from = point(fields[0], fields[1]);
  if (sum !== check(body) || !from || (fields.length !== 2 && fields.length !== 6)) throw invalidCursor('it is not a next_since this service gave (altered or cut short?)');
  if (fields.length === 2) return { from };
  const [, , toSeq, toEnd, ticker = '', date = ''] = fields;
  const to = point(toSeq, toEnd);
  if (!to || !TICKER.test(ticker) || !DATE.test(date)) throw invalidCursor('it is not a next_since this service gave (altered or cut short?)');
  return { from, page: { to, ticker, date } };
}

/** 400 `cursor_invalid`, naming the parameter. */
export function invalidCursor(why: string): AppError {
  const message = `is a sync cursor this service cannot continue from: ${why}`;
  return new AppError(
    'cursor_invalid',
    `since ${message}. Send next_since back exactly as received; to start over, call once with a plain since (the latest restated_at you hold) and continue with its next_since`,
    { errors: [{ parameter: 'since', message }] },
  );
}

const check = (body: string) => sha256Hex(`scores-sync-cursor${SEP}${body}`).slice(0, 8);
