import { AppError, badRequest } from '../../src/core/errors.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import { ledgerEntries, lineOf, type LedgerEntryDoc } from '../../projections/usage/usage.projection.js';

export const USAGE_LEDGER_DEFAULT_LIMIT = 100;
export const USAGE_LEDGER_MAX_LIMIT = 1000;
export const USAGE_LEDGER_LIMIT = { default: USAGE_LEDGER_DEFAULT_LIMIT, min: 1, max: USAGE_LEDGER_MAX_LIMIT } as const;

export interface UsageLedgerParams {
  accountId: string;
  /** `YYYY-MM` (UTC month); absent = every month. */
  month?: string;
  /** Entries per page: default 100, at most 1000. */
  limit?: number;
  /** `next_cursor` of the previous page (same account and month). */
  cursor?: string | null;
}

// Plain interfaces (no derived types): tsoa reads them for the OpenAPI document.
/** One line of your credit ledger. Fields an entry's kind does not carry are null. */
export interface LedgerEntryResponse {
  /** Position in your ledger (0-based, gap-free). */
  seq: number;
  /** CreditsDebited, PackPurchased, AllowancePeriodOpened, PlanChanged, UsageAlertRaised, … */
  kind: string;
  /** ISO 8601 UTC instant the ledger recorded it. */
  at: string;
  /** `YYYY-MM` the entry belongs to. */
  period: string;
  /** The `X-Request-Id` of the charged call. */
  request_id: string | null;
  /** Rate-card key of the endpoint charged. */
  endpoint: string | null;
  /** `rest` or `mcp`. */
  channel: string | null;
  cost: number | null;
  from_allowance: number | null;
  from_prepaid: number | null;
  from_overage: number | null;
  /** Credits a pack added. */
  credits: number | null;
  detail: string;
  hash: string;
  prev_hash: string;
  /** The entry's data exactly as hashed. */
  data: Record<string, unknown>;
}

export interface LedgerPageResponse {
  /** The month asked for; null when every month is listed. */
  month: string | null;
  /** Newest first. */
  entries: LedgerEntryResponse[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  next_cursor: string | null;
  /** Entries on this page. */
  count: number;
}

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

function toEntry(entry: LedgerEntryDoc): LedgerEntryResponse {
  const d = lineOf(entry);
  return {
    seq: d.seq,
    kind: d.kind,
    at: d.at,
    period: d.period,
    request_id: d.request_id,
    endpoint: d.endpoint,
    channel: d.channel,
    cost: d.cost,
    from_allowance: d.from_allowance,
    from_prepaid: d.from_prepaid,
    from_overage: d.from_overage,
    credits: d.credits,
    detail: d.detail,
    hash: d.hash,
    prev_hash: d.prev_hash,
    data: d.data,
  };
}

/** An account's credit ledger (every charge, pack, plan change and alert), newest first, paged. */
export async function getUsageLedger(reads: ReadStore, params: UsageLedgerParams): Promise<LedgerPageResponse> {
  const month = params.month ?? null;
  if (month !== null && !MONTH.test(month)) throw badRequest('month must be YYYY-MM', { month });
  const limit = params.limit ?? USAGE_LEDGER_DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) throw badRequest('limit must be a whole number of at least 1', { limit });
  if (limit > USAGE_LEDGER_MAX_LIMIT) {
    throw new AppError('limit_exceeded', `limit is at most ${USAGE_LEDGER_MAX_LIMIT}`, { limit, max: USAGE_LEDGER_MAX_LIMIT });
  }
  const filter = month === null ? { account_id: params.accountId } : { account_id: params.accountId, period: month };
  const page = await reads.find(ledgerEntries, filter, { sort: [['seq', -1]], limit, cursor: params.cursor ?? null });
  const entries = page.items.map(toEntry);
  return { month, entries, next_cursor: page.nextCursor, count: entries.length };
}
