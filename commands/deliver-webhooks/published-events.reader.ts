/**
 * What a run of score events published, read from the read models (which hold the run by then):
 * the score moves and divergence events to send, and the active webhooks of a type.
 */
import type { ReadStore } from '../../src/core/read-store.port.js';
import {
  divergenceFlagEvent,
  scoreMoveEvent,
  type DivergenceFlagEvent,
  type ScoreMoveEvent,
  type WebhookEventType,
} from '../../src/domain/webhooks/webhook-envelope.js';
import { scoreAt } from '../../projections/shared/columns.js';
import { dailyScores } from '../../projections/shared/daily-scores.js';
import { divergenceDays, divergenceEvents, scoredCells, scoreMoves } from '../../projections/divergence/divergence.projection.js';
import { webhooks, type WebhookDoc } from '../../projections/webhooks/webhooks.projection.js';
import type { Publications } from './webhook-messages.planner.js';

const PAGE = 500;

export async function activeWebhooks(reads: ReadStore, type: WebhookEventType): Promise<WebhookDoc[]> {
  const out: WebhookDoc[] = [];
  let cursor: string | null = null;
  do {
    const page: { items: WebhookDoc[]; nextCursor: string | null } = await reads.find(webhooks, { event_type: type, is_active: true }, { sort: [['id', 1]], limit: PAGE, cursor });
    for (const w of page.items) if (!w.deleted) out.push(w);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/** Each (ticker, date) published or restated that has a `score_moves` document now (|Δ service_score| ≥ 10). */
export async function scoreMoveEvents(reads: ReadStore, p: Publications): Promise<ScoreMoveEvent[]> {
  if (p.rows.length === 0) return [];
  const moves = await reads.getMany(scoreMoves, p.rows.map((r) => `${r.ticker}|${r.date}`));
  const out: ScoreMoveEvent[] = [];
  for (const r of p.rows) {
    const m = moves.get(`${r.ticker}|${r.date}`);
    if (m) out.push(scoreMoveEvent(m));
  }
  return out;
}

/** Each divergence event flagged on a date the run published scores for. */
export async function divergenceEventsOf(reads: ReadStore, p: Publications): Promise<DivergenceFlagEvent[]> {
  const out: DivergenceFlagEvent[] = [];
  for (const date of [...p.published_dates].sort()) out.push(...(await divergenceEventsOn(reads, date)));
  return out;
}

async function divergenceEventsOn(reads: ReadStore, date: string): Promise<DivergenceFlagEvent[]> {
  const flagged = (await reads.find(divergenceEvents, { flag_date: date }, { sort: [['ticker', 1]] })).items;
  if (flagged.length === 0) return [];
  const [day, scores] = await Promise.all([reads.get(divergenceDays, date), reads.get(dailyScores, date)]);
  if (!day || !scores) return [];
  const cells = scoredCells(day, scores);
  const out: DivergenceFlagEvent[] = [];
  for (const e of flagged) {
    const cell = cells[e.ticker];
    const i = scores.tickers.indexOf(e.ticker);
    if (!cell || i < 0) continue;
    out.push(
      divergenceFlagEvent({
        ticker: e.ticker,
        date,
        direction: e.direction,
        gap: e.flag_gap,
        percentile: cell[1],
        main_street: scoreAt(scores.main_street, i),
        wall_street: scoreAt(scores.wall_street, i),
        service_score: scoreAt(scores.service_score, i),
      }),
    );
  }
  return out;
}
