import type { Page, ReadStore } from '../../src/core/read-store.port.js';
import type { SignalFields } from '../../src/domain/scores/reference.events.js';
import { signals as signalsCollection, type SignalDoc } from '../../projections/reference/reference.projection.js';
import { toTimestamp } from '../shared/cross-section.js';
import { inUniverse, type Visibility } from '../shared/visibility.js';
import type { MeteredCall } from '../shared/query-context.js';
import { citationUrl } from '../shared/provenance.js';
import { parseIntParam } from '../../src/web/int-param.js';

export const SIGNALS_LIMIT = { default: 50, min: 1, max: 200 } as const;

export interface SignalResponse extends SignalFields {
  /**
   * When it was published, `YYYY-MM-DD HH:MM:SS` UTC.
   * @format timestamp
   */
  created_at: string;
}

const PAGE = 500;

/**
 * The newest signals the caller may see, newest first (ties by id, newest first).
 *
 * - Delay: a key whose data is delayed (free) sees only signals created on or before the end
 *   (23:59:59 UTC) of its as-of date, so a signal never runs ahead of the scores it explains.
 *   Before any visible scores it sees none.
 * - Coverage: a key with the `top100` universe sees a signal only when every ticker it names is
 *   in that universe (a signal naming no ticker, e.g. about a theme, is visible to all), so no
 *   research about an uncovered stock leaks through.
 */
export async function latestSignals(reads: ReadStore, v: Visibility, limit: number): Promise<SignalResponse[]> {
  const delayed = v.cutoff < v.today;
  if (delayed && v.asOf === null) return [];
  const filter = delayed ? { created_at: { $lte: `${v.asOf}T23:59:59.999Z` } } : {};
  const out: SignalDoc[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<SignalDoc> = await reads.find(signalsCollection, filter, {
      sort: [
        ['created_at', -1],
        ['id', -1],
      ],
      limit: PAGE,
      cursor,
    });
    for (const s of page.items) {
      if (s.tickers.every((t) => inUniverse(v, t))) out.push(s);
      if (out.length === limit) break;
    }
    cursor = page.nextCursor;
  } while (cursor !== null && out.length < limit);
  return out.map((s) => ({
    id: s.id,
    alert_type: s.alert_type,
    content: s.content,
    tickers: [...s.tickers],
    themes: [...s.themes],
    created_at: toTimestamp(s.created_at),
  }));
}

export interface SignalsResponse {
  /** Research signals, newest first. */
  signals: SignalResponse[];
  /**
   * Number of signals returned.
   * @isInt
   */
  count: number;
  /**
   * Data as-of date; on the free tier it trails today by 7 days, and so do the signals.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

export async function run(call: MeteredCall, limit: string | undefined): Promise<SignalsResponse> {
  const max = parseIntParam('limit', limit, SIGNALS_LIMIT);
  const v = await call.visibility();
  const signals = await latestSignals(call.ctx.reads, v, max);
  await call.charge('signals');
  return { signals, count: signals.length, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
