import type { RateKey } from '../../src/domain/rate-card.js';
import { formatUsd } from '../../src/domain/billing/invoice.js';
import { isLedgerEvent, ledgerLines, lineCount, type Channel, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import type { LedgerEntryDoc } from '../../projections/usage/usage.projection.js';

// The lines of a credit ledger, read from the log where the `ledger_entries` read model points:
// what /v1/usage/ledger pages through and `scores ledger export` and the audits compare.

// Plain interfaces (no derived types): tsoa reads them for the OpenAPI document of /v1/usage/ledger.
/** One line of your credit ledger. Fields an entry's kind does not carry are null. */
export interface LedgerEntryResponse {
  /**
   * Position in your ledger (0-based, gap-free).
   * @isInt
   */
  seq: number;
  // A string here (tsoa cannot read the ledger event union); the OpenAPI document lists the
  // values of LEDGER_EVENT_TYPES (src/app/http/openapi.ts).
  /** The ledger event the entry records: `CreditsDebited`, `PackPurchased`, `AllowancePeriodOpened`, `PlanChanged`, `UsageAlertRaised`, … */
  kind: string;
  /**
   * ISO 8601 UTC instant the ledger recorded it.
   * @format date-time
   */
  at: string;
  /**
   * `YYYY-MM` the entry belongs to.
   * @format month
   */
  period: string;
  /** The `X-Request-Id` of the charged call. */
  request_id: string | null;
  /** Rate-card key of the endpoint charged. */
  endpoint: RateKey | null;
  /** `rest` or `mcp`: how the call came. */
  channel: Channel | null;
  /** @isLong */
  cost: number | null;
  /** @isLong */
  from_allowance: number | null;
  /** @isLong */
  from_prepaid: number | null;
  /** @isLong */
  from_overage: number | null;
  /**
   * Credits a pack added.
   * @isLong
   */
  credits: number | null;
  detail: string;
  hash: string;
  prev_hash: string;
  /** The entry's data exactly as hashed. */
  data: LedgerEntryData;
}

/** A ledger entry's data exactly as hashed: the event's own fields, which depend on its `kind`. */
export interface LedgerEntryData {
  [field: string]: unknown;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function describeEvent(e: LedgerEvent): string {
  switch (e.type) {
    case 'LedgerOpened':
      return `Ledger opened on the ${e.data.tier} tier${e.data.pro ? ' with Pro membership' : ''}, overage off`;
    case 'LedgerPeriodClosed':
      return `Period ${e.data.period} closed: ${plural(e.data.carried.prepaid, 'prepaid credit')} carried over`;
    case 'AllowancePeriodOpened':
      return e.data.allowance === null
        ? `Period ${e.data.period} opened: unmetered`
        : `Period ${e.data.period} opened: allowance of ${plural(e.data.allowance, 'credit')}`;
    case 'CreditsDebited': {
      const d = e.data;
      const parts = [
        d.from_allowance ? `${d.from_allowance} from the allowance` : '',
        d.from_prepaid ? `${d.from_prepaid} from prepaid` : '',
        d.from_overage ? `${d.from_overage} as overage` : '',
      ].filter(Boolean);
      return `${plural(d.cost, 'credit')} for ${d.endpoint} (${d.channel})${parts.length ? `: ${parts.join(', ')}` : ''}`;
    }
    case 'CreditsDebitedBatch':
      return `${plural(lineCount(e), 'call')} charged`;
    case 'PackPurchased':
      return `Pack ${e.data.pack_id}: ${plural(e.data.credits, 'prepaid credit')} added${typeof e.data.price_cents === 'number' ? ` for ${formatUsd(e.data.price_cents)}` : ''}`;
    case 'OverageSwitched':
      return `Overage switched ${e.data.allow_overage ? 'on' : 'off'}`;
    case 'PlanChanged':
      return e.data.reason === 'cancelled_at_period_end'
        ? `Plan fell back to ${e.data.tier} at the end of the cancelled subscription`
        : e.data.reason === 'downgraded_at_period_end'
          ? `Plan moved to ${e.data.tier} at the end of the month, as scheduled`
          : `Plan changed to ${e.data.tier}`;
    case 'PlanCancellationScheduled':
      return `Plan cancelled; falls back to free at ${e.data.effective_at}`;
    case 'PlanDowngradeScheduled':
      return `Plan moves to ${e.data.tier} at ${e.data.effective_at}`;
    case 'ProrationCharged':
      return `${e.data.kind === 'pro' ? 'Pro membership' : `Upgrade from ${e.data.from} to ${e.data.to}`}: ${e.data.days} of ${e.data.days_in_month} days charged, ${formatUsd(e.data.amount_cents)} (payment ${e.data.payment_ref})`;
    case 'ProMembershipChanged':
      return e.data.pro ? 'Pro membership started' : 'Pro membership ended';
    case 'UsageAlertRaised':
      return `${e.data.threshold}% of the allowance used (${e.data.used} of ${e.data.allowance}) in ${e.data.period}`;
    default: {
      const _exhaustive: never = e;
      return (_exhaustive as { type: string }).type;
    }
  }
}

const num = (x: unknown): number | null => (typeof x === 'number' ? x : null);
const str = (x: unknown): string | null => (typeof x === 'string' ? x : null);

/** The statement line of one ledger line (an event, or one call of a batch): every field from its data. */
export function lineOf(seq: number, period: string, e: LedgerEvent): LedgerEntryResponse {
  const d = e.data as unknown as Record<string, unknown>;
  return {
    seq,
    kind: e.type,
    at: str(d['at']) ?? '',
    period,
    request_id: str(d['request_id']),
    endpoint: str(d['endpoint']) as RateKey | null,
    channel: str(d['channel']) as Channel | null,
    cost: num(d['cost']),
    from_allowance: num(d['from_allowance']),
    from_prepaid: num(d['from_prepaid']),
    from_overage: num(d['from_overage']),
    credits: e.type === 'PackPurchased' ? num(d['credits']) : null,
    detail: describeEvent(e),
    hash: str(d['hash']) ?? '',
    prev_hash: str(d['prev_hash']) ?? '',
    data: d,
  };
}

/** The statement lines of one event whose first line is `seq`, oldest first, from the event as read from the log. */
export function eventLines(seq: number, period: string, event: { type: string; data: unknown }): LedgerEntryResponse[] {
  if (!isLedgerEvent(event) || event.data === null || typeof event.data !== 'object') return [];
  return ledgerLines(event).map((line, i) => lineOf(seq + i, period, line));
}

/** The statement lines of an entry, oldest first, from its events (in order) as read from the log. */
export function statementLines(entry: LedgerEntryDoc, events: ReadonlyArray<{ type: string; data: unknown }>): LedgerEntryResponse[] {
  const lines: LedgerEntryResponse[] = [];
  for (const e of events) lines.push(...eventLines(entry.seq + lines.length, entry.period, e));
  return lines;
}
