import type { Client } from 'openapi-fetch';
import { queryOf, type DateLike } from './dates.js';
import type { components, paths } from './generated/schema.js';

/** `X-Credits-Remaining`: a number, or `unlimited` on an unmetered plan. */
export type Credits = number | 'unlimited';

/** What a sync needs of a ScoresClient (its typed GET and the latest credits). */
export interface HistoryClient {
  GET: Client<paths>['GET'];
  credits: Credits | null;
}

export type HistoryPage = components['schemas']['MultiTickerHistoryResponse'];
export type HistoryRow = components['schemas']['MultiTickerHistoryRow'];

export interface SyncOptions {
  /** At most 50 symbols; omitted: every ticker the key can see. Keep the same through a sync. */
  tickers?: string[];
  /** First date, YYYY-MM-DD or a Date. Keep the same through a sync. */
  start?: DateLike;
  /** Last date, YYYY-MM-DD or a Date. Keep the same through a sync. */
  end?: DateLike;
  /** Each row as it was published at this instant (point in time): a string or a Date. */
  asKnownAt?: DateLike;
  /** The `nextSince` saved with your copy: continue from it. Omitted or null: the whole history of the window. */
  since?: string | null;
  /** After the last page, poll again every this many milliseconds; omitted: stop after the last page. */
  pollIntervalMs?: number;
  /** Ends the polling (between calls). */
  signal?: AbortSignal;
}

export interface SyncPage {
  /** New or restated rows: upsert them by ticker and date. */
  rows: HistoryRow[];
  /** Save it with the rows, in the same transaction: pass it as `since` to resume. */
  nextSince: string;
  /** More rows of the same change set follow at once. */
  hasMore: boolean;
  /** `X-Credits-Remaining` after this page (a row costs 1 credit, an empty page nothing). */
  credits: Credits | null;
  /** The whole answer (window, as-of date, citation). */
  page: HistoryPage;
}

/** Dated before any score: a window ending here holds nothing (dates are clamped, never refused). */
const BEFORE_ANY_DATA = '1970-01-01';

/**
 * `GET /v1/scores/history` as an async iterator over `next_since` (docs/sync.md): each page holds
 * the rows written or restated since the previous one, each row version once. Break out of the loop
 * (or crash) at any page and start again with the last `nextSince` you saved: nothing is missed or
 * billed twice.
 *
 * A fresh sync (no `since`) first takes a cursor from a free call whose window ends before any
 * data (`end=1970-01-01`): it says "I hold nothing", so the next call brings the whole window as
 * the rows that entered it, in pages of at most 200,000 rows (`has_more`), where a plain first
 * call over more than 200,000 rows would be refused with 422 `limit_exceeded`.
 */
export async function* syncHistory(client: HistoryClient, options: SyncOptions): AsyncGenerator<SyncPage, void, undefined> {
  type Query = NonNullable<paths['/v1/scores/history']['get']['parameters']['query']>;
  const dated = queryOf<Query>({ start: options.start, end: options.end, as_known_at: options.asKnownAt }, { start: 'date', end: 'date', as_known_at: 'instant' });
  const query: Query = {
    ...(options.tickers ? { tickers: options.tickers } : {}),
    ...(dated.as_known_at ? { as_known_at: dated.as_known_at } : {}),
  };
  let since: string;
  if (options.since) since = options.since;
  else {
    const { data } = await client.GET('/v1/scores/history', { params: { query: { ...query, end: BEFORE_ANY_DATA } } });
    since = data!.next_since;
  }
  const window: Query = { ...query, ...(dated.start ? { start: dated.start } : {}), ...(dated.end ? { end: dated.end } : {}) };
  while (!options.signal?.aborted) {
    const { data } = await client.GET('/v1/scores/history', { params: { query: { ...window, since } } });
    const page: HistoryPage = data!;
    since = page.next_since;
    yield { rows: page.rows, nextSince: page.next_since, hasMore: page.has_more, credits: client.credits, page };
    if (page.has_more) continue;
    if (options.pollIntervalMs === undefined) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, options.pollIntervalMs);
      options.signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}
