import { compositeScore, round1 } from '../composite.js';

/** The `source` of every envelope this service sends. */
export const WEBHOOK_SOURCE = 'scores-service';
export const WEBHOOK_EVENT_TYPES = ['score_move', 'divergence_event'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A stock's `service_score` moved by 10 or more (absolute) from its previous scored day. */
export interface ScoreMoveEvent {
  type: 'score_move';
  /** Stock symbol. */
  ticker: string;
  /**
   * The scored day of the move, YYYY-MM-DD.
   * @format date
   */
  date: string;
  /** service_score on `date`, 0-100, 1 decimal. */
  service_score: number;
  /** service_score on the stock's previous scored day. */
  prior_score: number;
  /** service_score − prior_score, 1 decimal; negative when the score fell. */
  delta: number;
  /** True only in a test delivery. */
  test: boolean;
}

/**
 * A new divergence extreme started: the flag day of an event of `GET /v1/divergence/events`.
 * Only what is final on the flag day: the price and the outcome come when the event closes.
 */
export interface DivergenceFlagEvent {
  type: 'divergence_event';
  /** Stock symbol. */
  ticker: string;
  /**
   * The flag date, YYYY-MM-DD: `flag_date` in `/v1/divergence/open` and `/v1/divergence/events`.
   * @format date
   */
  date: string;
  /** `bull` (main_street above wall_street) or `bear`. */
  direction: 'bull' | 'bear';
  /** main_street − wall_street on the flag date, 1 decimal (`flag_gap` in `/v1/divergence/open`). */
  gap: number;
  /** Rank of |gap| in the flag date's whole cross-section, 0-1, 4 decimals; at least 0.95. */
  percentile: number;
  /** Measured consumer demand on the flag date, 0-100. */
  main_street: number;
  /** Analyst sentiment on the flag date, 0-100. */
  wall_street: number;
  /** The composite score on the flag date, 0-100. */
  service_score: number;
  /** True only in a test delivery. */
  test: boolean;
}

export type WebhookEvent = ScoreMoveEvent | DivergenceFlagEvent;

/** The JSON body of every delivery. */
export interface WebhookEnvelope {
  events: WebhookEvent[];
  /**
   * When the message was made, ISO 8601 UTC; retries resend the same body.
   * @format date-time
   */
  sent_at: string;
  source: string;
  /** True for a test delivery, whose events are examples. */
  test: boolean;
}

/** A score move as the divergence read model records it. */
export interface ScoreMoveFacts {
  ticker: string;
  date: string;
  service_score: number;
  prior_score: number;
}

export type DivergenceFlagFacts = Omit<DivergenceFlagEvent, 'type' | 'test'>;

export function scoreMoveEvent(move: ScoreMoveFacts): ScoreMoveEvent {
  const { ticker, date, service_score, prior_score } = move;
  // The same rounding as the read model's `delta`, so the webhook and the API agree.
  return { type: 'score_move', ticker, date, service_score, prior_score, delta: round1(service_score - prior_score), test: false };
}

export function divergenceFlagEvent(flag: DivergenceFlagFacts): DivergenceFlagEvent {
  const { ticker, date, direction, gap, percentile, main_street, wall_street, service_score } = flag;
  return { type: 'divergence_event', ticker, date, direction, gap, percentile, main_street, wall_street, service_score, test: false };
}

/** The body of a live message. A test event does not belong in one. */
export function liveEnvelope(events: readonly WebhookEvent[], sentAt: Date): WebhookEnvelope {
  if (events.length === 0) throw new RangeError('a webhook message carries at least one event');
  if (events.some((e) => e.test)) throw new RangeError('a live webhook message carries no test event');
  return { events: [...events], sent_at: sentAt.toISOString(), source: WEBHOOK_SOURCE, test: false };
}

/**
 * The body of a test delivery: one example event of `eventType`, marked test, dated the day it
 * is sent (a receiver that checks dates sees a plausible event, not one years old).
 */
export function testEnvelope(eventType: WebhookEventType, sentAt: Date): WebhookEnvelope {
  const date = sentAt.toISOString().slice(0, 10);
  return { events: [{ ...EXAMPLES[eventType], date, test: true }], sent_at: sentAt.toISOString(), source: WEBHOOK_SOURCE, test: true };
}

const EXAMPLES: { [T in WebhookEventType]: Extract<WebhookEvent, { type: T }> } = {
  score_move: scoreMoveEvent({ ticker: 'COST', date: '2019-06-13', service_score: 71.4, prior_score: 60.2 }),
  divergence_event: divergenceFlagEvent({
    ticker: 'COST',
    date: '2019-06-10',
    direction: 'bull',
    gap: 28.7,
    percentile: 0.9981,
    main_street: 81.2,
    wall_street: 52.5,
    service_score: compositeScore(81.2, 52.5),
  }),
};
