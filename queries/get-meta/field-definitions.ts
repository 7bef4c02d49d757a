import { ERROR_CODES } from '../../src/core/errors.js';
import { PROBLEM_FIELDS } from '../../src/web/problem.js';
import { SIGNAL_ALERT_TYPES, THEME_RELATIONSHIPS } from '../../src/domain/scores/reference.events.js';

/**
 * The data dictionary `GET /v1/meta` publishes: one definition for every field any endpoint
 * returns (spec "Resources and their fields" plus the fields this service adds). Kept in one
 * table so the docs and the MCP tool `get_dataset_info` can quote the same text.
 */
export interface FieldDefinition {
  /** `string`, `date` (YYYY-MM-DD), `timestamp` (YYYY-MM-DD HH:MM:SS UTC), `number`, `integer`, `boolean`, `url`, `array`, `object`. */
  type: string;
  /** What the field means. */
  description: string;
}

const f = (type: string, description: string): FieldDefinition => ({ type, description });

const DEFINED: Record<string, FieldDefinition> = {
  // Scores
  ticker: f('string', 'Stock symbol, upper case (at most 12 characters).'),
  date: f('date', 'The trading day a score row belongs to.'),
  main_street: f('number', 'Measured consumer demand, 0-100 (web visits, app and search activity), 1 decimal.'),
  wall_street: f('number', 'Analyst sentiment, 0-100 (ratings, price-target revisions, estimate changes), 1 decimal.'),
  service_score: f('number', 'Composite of main_street and wall_street, 0-100, 1 decimal. The formula is internal.'),
  divergence_gap: f('number or null', 'main_street − wall_street; positive when consumer demand runs ahead of analysts; null if either is missing.'),
  estimated: f('boolean', 'true when the row is a model backfill from before measured coverage of the stock began.'),
  restated_at: f('timestamp', 'When the row was last written (its first publication until it is restated). Compare it with your stored copy to detect corrections.'),
  // Provenance wrapper
  as_of: f('date', 'Data as-of date of the response: the latest score date you may see. On the free tier it trails today by 7 days.'),
  citation_url: f('url', 'Page to cite for the data, dated with the response’s as_of (`/stocks/{ticker}?as_of=…`, or `/docs?as_of=…` for a response about many stocks). The stock page shows that day’s numbers once they are public (7 days after publication), and until then says they are subscriber data.'),
  source: f('string', 'Data-source statement (score and screener responses).'),
  // History responses
  rows: f('array', 'The rows of a history, screener or divergence response.'),
  count: f('integer', 'Number of items returned; on per-row endpoints, the billed quantity.'),
  history_floor: f('date', 'Effective start date of a history after clamping to your tier’s history depth.'),
  provenance_note: f('string', 'Statement of how a history series is produced (restatements, backfill, live computation).'),
  tickers: f('array of string or integer', 'Symbols (coverage, themes, signals); in the multi-ticker history response, the number of tickers.'),
  start: f('date', 'First date of a history window after clamping.'),
  end: f('date', 'Last date of a history window after clamping to your as-of date.'),
  since: f('date or timestamp or null', 'Echo of the `since` filter (history: rows written on or after it, or a next_since cursor; coverage: tickers scored on or after it; events: flagged on or after it); a webhook resend of failed messages: made at or after it (a timestamp, 30 days back at most), null for one delivery.'),
  next_since: f('string', 'Multi-ticker history: the sync cursor (opaque, `c1_…`). Send it back as `since` to get each row written or entering your window after this response exactly once.'),
  has_more: f('boolean', 'Multi-ticker history with a cursor: true when the change set was larger than one call returns; next_since continues it at once.'),
  as_known_at: f('string or null', 'History: echo of `as_known_at`, the instant whose published values were served (an ISO 8601 instant, UTC); null for the current values.'),
  // Social heat
  metric: f('string', 'Name of a live-computed series; `social_heat_live`.'),
  formula: f('string', 'Statement of how a live-computed series is derived.'),
  value: f('number', 'Social heat: the day’s web visits over the maximum of that and the trailing 365 calendar days’ visits, × 100, 0-100, 2 decimals.'),
  // Divergence
  company: f('string', 'Company name.'),
  gap: f('number', 'main_street − wall_street on the as-of date.'),
  percentile: f('number', 'Fraction 0-1: rank of the stock’s |gap| in that day’s cross-section.'),
  days_at_extreme: f('integer', 'Consecutive trading days the stock has been at an extreme (percentile ≥ 0.95) in the same direction.'),
  why_now: f('string', 'Researched context for a divergence (builder plan and higher).'),
  why_now_headline: f('string', 'One-line headline of why_now (builder plan and higher).'),
  why_now_included: f('boolean', 'Whether your tier received the why_now research fields.'),
  direction: f('string', 'Divergence: `bull` (main_street above wall_street) or `bear` (below); trades: `long` or `short`.'),
  // Events and outcomes
  events: f('array', 'Divergence events (or, in a webhook envelope, the delivered events).'),
  flag_date: f('date', 'Day a divergence extreme started.'),
  close_date: f('date', 'Day a divergence event closed (percentile below 0.5, or after 60 trading days).'),
  price_at_flag: f('number', 'Close price on flag_date.'),
  price_at_close: f('number', 'Close price on close_date.'),
  pct_change: f('number', 'Close-to-close price change from flag to close, percent.'),
  days: f('integer', 'Calendar days from flag to close.'),
  closed_trades: f('integer', 'Number of closed model-portfolio trades.'),
  win_rate: f('number', 'Fraction 0-1 of closed trades with a positive return.'),
  avg_return_pct: f('number', 'Mean direction-adjusted return of closed trades, percent.'),
  median_return_pct: f('number or null', 'Median direction-adjusted return of closed trades, percent.'),
  avg_days_held: f('number or null', 'Mean calendar days from entry to exit of closed trades, 1 decimal.'),
  best_return_pct: f('number or null', 'Highest direction-adjusted return of a closed trade, percent.'),
  worst_return_pct: f('number or null', 'Lowest direction-adjusted return of a closed trade, percent.'),
  trades: f('array', 'Closed model-portfolio trades.'),
  entry_date: f('date', 'Trade entry (the flag date).'),
  exit_date: f('date', 'Trade exit (the close date).'),
  entry_price: f('number', 'Close price at entry.'),
  exit_price: f('number', 'Close price at exit.'),
  return_pct: f('number', 'Trade return in percent, direction-adjusted (a short gains when the price falls).'),
  days_held: f('integer', 'Calendar days from entry to exit.'),
  win: f('boolean', 'return_pct > 0.'),
  open_trades: f('array', 'Currently open divergence extremes.'),
  flag_gap: f('number', 'gap on flag_date.'),
  days_open: f('integer', 'Trading days since flag_date.'),
  current_gap: f('number', 'gap on the as-of date.'),
  current_percentile: f('number', 'percentile on the as-of date.'),
  // Discovery
  id: f('integer', 'Identifier of a signal or a webhook.'),
  alert_type: f('string', `Kind of research signal, one of: ${SIGNAL_ALERT_TYPES.map((t) => `\`${t}\``).join(', ')}.`),
  content: f('string', 'Text of a research signal.'),
  themes: f('array', 'Theme baskets (list response) or the theme slugs a signal concerns.'),
  created_at: f('timestamp', 'When a signal or a delivery attempt was created.'),
  signals: f('array', 'Research signals, newest first.'),
  slug: f('string', 'Theme identifier.'),
  name: f('string', 'Theme name, company name of an earnings reporter, or what an account calls an API key.'),
  description: f('string', 'What a theme covers.'),
  strength: f('number', '0-100: how strongly a theme drives its constituents.'),
  stock_count: f('integer', 'Constituents of a theme in your universe.'),
  scored_count: f('integer', 'Constituents with scores on your as-of date (the ones the averages cover).'),
  avg_main_street: f('number or null', 'Mean main_street of a theme’s scored constituents, 1 decimal.'),
  avg_wall_street: f('number or null', 'Mean wall_street of a theme’s scored constituents, 1 decimal.'),
  avg_service_score: f('number or null', 'Mean service_score of a theme’s scored constituents, 1 decimal.'),
  constituents: f('array', 'A theme’s stocks with their relationship and as-of scores.'),
  relationship: f('string', `How a stock relates to a theme, one of: ${THEME_RELATIONSHIPS.map((r) => `\`${r}\``).join(', ')}.`),
  coverage: f('string', 'Coverage response: the universe your key sees, `all` or `top100`; meta: the universe statement.'),
  reporters: f('array', 'Stocks reporting earnings within the horizon.'),
  next_earnings_date: f('date', 'Next scheduled earnings report.'),
  // Account
  tier: f('string', 'Plan tier: free, hobbyist, builder, quant, enterprise.'),
  pro_member: f('boolean', 'Whether the consumer Pro-member overlay is active.'),
  monthly_allowance: f('integer or null', 'Included credits per month; null = unmetered (enterprise).'),
  used_this_month: f('integer', 'Credits used this calendar month (allowance draws plus overage).'),
  credits_remaining: f('integer', 'Allowance minus used; negative only in overage.'),
  overage_credits: f('integer', 'Credits used beyond allowance and prepaid packs this month.'),
  overage_cost_usd: f('number', 'Accrued overage in US dollars.'),
  prepaid_credits: f('integer', 'Banked pack credits; consumed after the allowance; they carry over.'),
  allow_overage: f('boolean', 'Overage on (true) or hard stop with 429 (false).'),
  overage_per_1k_usd: f('number or null', 'Overage price per 1,000 credits.'),
  resets_at: f('string', 'ISO 8601 UTC instant the allowance resets (next month boundary).'),
  entitlements: f('object', '{credits, delay_days, coverage, history_days} of your plan after the Pro overlay.'),
  credits: f('integer or null', 'entitlements: monthly credits (null = unmetered); rate card and ledger: credits of an endpoint or a pack.'),
  delay_days: f('integer', 'Days the data you see trails today (free: 7).'),
  history_days: f('integer or null', 'Days of history you can reach; null = the full history.'),
  unit: f('string', 'What a rate-card price is per: `call`, `row` or `constituent`.'),
  endpoint: f('string', 'Rate card: method and path; ledger: the rate-card key of the endpoint charged.'),
  rate_card: f('object', 'Live credit cost of every endpoint: {credits, unit (call, row, constituent), endpoint}.'),
  // API keys (GET /v1/keys, PATCH /v1/keys/{key_id})
  keys: f('array', 'Your account’s API keys, with their limits and spend.'),
  prefix: f('string', 'The first characters of an API key, shown to tell keys apart (the key itself is shown once, when made).'),
  current: f('boolean', 'Whether a listed API key is the one that made the request.'),
  daily_credit_limit: f('integer or null', 'Credits an API key may spend per UTC day; null: no daily limit.'),
  monthly_credit_limit: f('integer or null', 'Credits an API key may spend per UTC month; null: no monthly limit.'),
  expires_at: f('string or null', 'ISO 8601 UTC instant from which an API key no longer works; null: never.'),
  scope: f('string', 'What an API key may call: `all`, or `read_only` (GET calls only: no webhook or key changes).'),
  operations: f('array or null', 'The operations (rate-card keys) an API key may call; null: all its scope allows.'),
  operation: f('string or null', 'Errors (key_scope_forbidden): the operation (rate-card key) refused.'),
  spent_today: f('integer', 'Credits charged to an API key today (UTC).'),
  spent_this_month: f('integer', 'Credits charged to an API key this month (UTC).'),
  budget_remaining: f('integer or null', 'What an API key may still spend: the smaller of what is left of its daily and monthly limits; null without a credit limit.'),
  key_name: f('string', 'The name the account gave the API key that made a call (request log).'),
  key_prefix: f('string', 'The first characters of the API key that made a call, as the account page shows them (request log).'),
  tool: f('string or null', 'The MCP tool a call named; null for a REST call (request log).'),
  method: f('string', 'The HTTP method of a REST call, or POST for an MCP call (request log).'),
  path: f('string', 'The path template of the operation a call reached, such as /v1/scores/{ticker} (request log).'),
  latency_ms: f('number', 'Milliseconds from a call\'s arrival to its answer, as the service measured it (request log).'),
  requests: f('array', 'The account\'s calls of the page, newest first (GET /v1/requests).'),
  kept_days: f('integer', 'How many days the request log keeps a call (30).'),
  last_used_at: f('string or null', 'ISO 8601 UTC instant of an API key’s last charged call; null: none yet.'),
  changed: f('boolean', 'Whether a change was recorded (false: it was so already).'),
  // Credit ledger (GET /v1/usage/ledger)
  month: f('string or null', 'Calendar month `YYYY-MM` (UTC) a ledger page covers.'),
  entries: f('array', 'Ledger entries, newest first.'),
  next_cursor: f('string or null', 'Pass as `cursor` for the next page; null on the last page.'),
  seq: f('integer', 'Position of an entry in your ledger (0-based, gap-free).'),
  at: f('string', 'ISO 8601 UTC instant the ledger recorded an entry.'),
  period: f('string', 'Month `YYYY-MM` a ledger entry belongs to.'),
  request_id: f('string or null', 'The X-Request-Id of the charged call.'),
  channel: f('string or null', '`rest` or `mcp`.'),
  cost: f('integer or null', 'Credits a call cost.'),
  from_allowance: f('integer or null', 'Part of a cost drawn from the monthly allowance.'),
  from_prepaid: f('integer or null', 'Part of a cost drawn from prepaid packs.'),
  from_overage: f('integer or null', 'Part of a cost billed as overage.'),
  hash: f('string', 'SHA-256 of a ledger entry, chained to the previous one.'),
  prev_hash: f('string', 'hash of the previous ledger entry.'),
  data: f('object', 'A ledger entry’s data exactly as hashed.'),
  signed_head: f('object or null', 'The ledger’s latest line (seq, hash) signed by the service (Ed25519): {statement, account_id, seq, hash, at, key_id, alg, signature}; null when the service signs nothing.'),
  statement: f('string', 'The exact text a signed head’s signature covers (see docs/ledger.md, Signed heads).'),
  account_id: f('string', 'The account a signed head is for.'),
  key_id: f('string', 'Signed heads: id of the signing key, listed at /.well-known/scores-ledger-keys.json; API keys (GET /v1/keys, key_budget_exhausted): id of one of your API keys.'),
  alg: f('string', 'Signature algorithm: `Ed25519`.'),
  signature: f('string', 'Base64 signature of `statement`.'),
  // Meta
  dataset: f('string', 'What the dataset is.'),
  fields: f('object', 'This data dictionary.'),
  history: f('object', 'Depth of the score history, point-in-time vintage statistics and the restatement policy.'),
  depth: f('object', 'How far the score history reaches: {first_date, last_date, trading_days, rows}.'),
  first_date: f('date or null', 'First date with scores.'),
  last_date: f('date or null', 'Latest published score date.'),
  trading_days: f('integer', 'Trading days with published scores.'),
  vintages: f('object', 'Point-in-time statistics of restatements.'),
  rows_restated: f('integer', 'Score rows restated at least once.'),
  share_restated: f('number', 'rows_restated / rows, a fraction 0-1.'),
  restatements: f('integer', 'Superseded versions kept (one per restatement).'),
  median_restatement_lag_hours: f('number or null', 'Median time from a row’s first publication to its first restatement, hours.'),
  max_restatement_lag_hours: f('number or null', 'Longest time from first publication to first restatement, hours.'),
  max_versions_per_row: f('integer', 'Most versions any row has had (1 = never restated).'),
  last_restated_at: f('timestamp or null', 'Latest restatement.'),
  restatement_policy: f('string', 'How and why rows are restated, and how to follow the corrections.'),
  license: f('url', 'Licence terms.'),
  docs: f('url', 'Documentation.'),
  mcp: f('url', 'MCP server endpoint (streamable HTTP; same X-API-Key).'),
  // Delivery
  exports: f('array', 'Latest bulk export files.'),
  note: f('string', 'Statement about the bulk exports.'),
  url: f('url', 'Download URL of an export, or a webhook’s receiver (https).'),
  bundle_id: f('string', 'The export bundle a listed file belongs to: the first segment of its download path.'),
  row_count: f('integer', 'Data rows in an export file.'),
  sha256: f('string', 'Hex SHA-256 of the gzipped export file.'),
  generated_at: f('string', 'When an export was built, `YYYY-MM-DD HH:MM` UTC.'),
  webhooks: f('array', 'Your registered webhooks.'),
  event_type: f('string', '`divergence_event` (new extreme onsets) or `score_move` (|day-over-day service_score change| ≥ 10).'),
  is_active: f('boolean', 'Whether a webhook still receives deliveries.'),
  consecutive_failures: f('integer', 'Failed deliveries in a row.'),
  last_fired_at: f('timestamp or null', 'Last delivery attempt to a webhook.'),
  secret: f('string', 'Webhook signing secret; returned once, at registration or rotation.'),
  previous_secret_expires_at: f('timestamp', 'After a webhook secret rotation: until when deliveries are also signed with the previous secret.'),
  overlap_hours: f('integer', 'In a webhook secret rotation request: hours the previous secret keeps signing beside the new one (0-168, default 24).'),
  signing: f('string', 'Statement of the webhook signing scheme.'),
  ok: f('boolean', 'Whether an operation (delete, delivery) succeeded.'),
  status_code: f('integer or null', 'Receiver’s HTTP status of a delivery, or null.'),
  error: f('string or null', 'Delivery error, or null.'),
  delivered_to: f('url', 'Receiver URL of a test delivery.'),
  signature_header: f('string', 'Name of the header carrying the delivery signature (X-Service-Signature).'),
  payload: f('object', 'The signed event envelope sent.'),
  deliveries: f('array', 'Latest 50 delivery attempts, newest first.'),
  message_id: f('string', 'A webhook message’s id: its `webhook-id` header, the same on every attempt and resend of it (the `delivery_id` of a resend).'),
  attempt: f('integer', 'A delivery attempt’s number, per message, from 1 (a resend’s attempts follow the earlier ones).'),
  message_ids: f('array', 'The webhook messages a resend made owed again, oldest first.'),
  idempotency_key: f('string', 'The key a webhook resend was decided under: the request’s `Idempotency-Key`, or one the service gave it.'),
  replayed: f('boolean', 'True when an earlier request with the same `Idempotency-Key` decided the resend: nothing more was sent.'),
  requested_at: f('timestamp', 'When a webhook resend was decided.'),
  webhook_id: f('integer', 'A webhook’s id.'),
  kind: f('string', 'Delivery attempt: `live` or `test`; ledger entry: its event kind (CreditsDebited, PackPurchased, …).'),
  event_count: f('integer', 'Events in a delivery.'),
  // Webhook envelope
  prior_score: f('number', 'score_move: the previous day’s service_score.'),
  delta: f('number', 'score_move: service_score − prior_score.'),
  sent_at: f('string', 'ISO 8601 UTC instant a delivery was sent.'),
  test: f('boolean', 'true on test deliveries and test events.'),
  type: f('string', 'Error responses: URI naming the problem type; delivery envelopes: the event type.'),
  // Errors (application/problem+json, RFC 9457)
  title: f('string', 'Short summary of an error type.'),
  status: f('integer or string', 'Errors: HTTP status of an error (an integer); API keys: `active`, `rotated` (works until its grace period ends) or `revoked`.'),
  detail: f('string', 'Errors: what went wrong in this request; ledger entries: a readable summary.'),
  code: f('string', `Stable error code, one of: ${ERROR_CODES.join(', ')}.`),
  errors: f('array', 'Validation errors: {parameter, message} per bad parameter.'),
};

/** The fields of the error codes (src/web/problem.ts) the table does not define already, in its words. */
function problemFields(): Record<string, FieldDefinition> {
  const out: Record<string, FieldDefinition> = {};
  for (const [code, fields] of Object.entries(PROBLEM_FIELDS)) {
    for (const [name, { schema }] of Object.entries(fields)) {
      if (name in DEFINED || name in out) continue;
      const items = schema['items'] as { type?: string } | undefined;
      const type = `${schema['type'] === 'array' ? `array of ${items?.type ?? 'values'}` : String(schema['type'])}${schema['nullable'] ? ' or null' : ''}`;
      out[name] = f(type, `Errors (${code}): ${String(schema['description'])}`);
    }
  }
  return out;
}

export const FIELD_DEFINITIONS: Readonly<Record<string, FieldDefinition>> = Object.freeze({ ...DEFINED, ...problemFields() });
