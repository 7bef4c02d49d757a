/**
 * Usage-alert emails (docs/ledger.md): one `mail_outbox` document per `UsageAlertRaised`, holding the
 * finished message, and marked sent by `UsageAlertEmailed`. The usage-alert reactor
 * (commands/send-usage-alerts) sends the pending ones and records each send as that event, so a
 * rebuild of the read models from the log ends with every sent mail marked sent again.
 *
 * The text is composed here, from events only, so a rebuild writes the same words the live run did.
 * For "what happens at 100%" it keeps, per account, the few ledger facts the text needs (tier,
 * Pro, overage switch, prepaid credits) in `usage_alert_accounts`.
 *
 * The recipient comes from the `accounts` collection of the api-keys projection: run this
 * projection AFTER `apiKeysProjection` in the runner's list, so an account created in the same
 * batch as its first alert is already visible.
 */
import type { RecordedEvent } from '../../src/core/event-store.port.js';
import type { Projection, ProjectionContext } from '../../src/core/projection.js';
import { defineCollection } from '../../src/core/read-store.port.js';
import { PLANS, USAGE_ALERT_THRESHOLDS, isTier, type Tier, type UsageAlertThreshold } from '../../src/domain/plans.js';
import { count, creditOptions, credits, joinOr, plural, usd } from '../../src/domain/credit-options.js';
import { LEDGER_STREAM_PREFIX, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { accounts } from '../shared/accounts.js';
import { MAIL_STREAM_PREFIX, type UsageAlertEmailed } from '../../src/domain/mail/mail.events.js';

// ---------------------------------------------------------------------------------------------
// Read models

export type MailStatus = 'pending' | 'sent' | 'no_address';

/** One usage-alert email; `id` is the `UsageAlertRaised` event's id, also the mail's idempotency key. */
export interface MailOutboxDoc {
  id: string;
  account_id: string;
  /** null when the account has no email address (`no_address`). */
  to: string | null;
  subject: string;
  text: string;
  /** `YYYY-MM` the alert is about. */
  period: string;
  threshold: UsageAlertThreshold;
  status: MailStatus;
  /** When the alert was raised (the ledger decision's instant). */
  created_at: string;
  /** When the reactor handed it to the mail port; null until then. */
  sent_at: string | null;
}

export const mailOutbox = defineCollection<MailOutboxDoc>({
  name: 'mail_outbox',
  key: (m) => m.id,
  fields: ['status', 'period', 'created_at', 'threshold', 'account_id'],
  indexes: [['status', 'period', 'created_at'], ['account_id']],
});

/** What the alert text needs to say about the account's plan at the moment of the alert. */
export interface AlertPlan {
  tier: Tier;
  pro: boolean;
  allow_overage: boolean;
  /** Prepaid pack credits left. */
  prepaid: number;
}

export interface AlertAccountDoc extends AlertPlan {
  account_id: string;
}

export const alertAccounts = defineCollection<AlertAccountDoc>({
  name: 'usage_alert_accounts',
  key: (a) => a.account_id,
  fields: ['account_id'],
  indexes: [],
});

// ---------------------------------------------------------------------------------------------
// The message

export interface UsageAlertFacts {
  account_id: string;
  /** `YYYY-MM`. */
  period: string;
  threshold: UsageAlertThreshold;
  /** Credits drawn from the allowance plus overage credits, this period. */
  used: number;
  allowance: number;
  /** null when the ledger's opening was not seen: the text then explains every case briefly. */
  plan: AlertPlan | null;
}

const PERIOD = /^(\d{4})-(0[1-9]|1[0-2])$/;


/** 00:00 UTC on the 1st of the month after `period`. */
export function resetsAtOf(period: string): Date {
  const m = PERIOD.exec(period);
  if (!m) throw new RangeError(`not a period (YYYY-MM): ${period}`);
  // Date.UTC months are 0-based, so the 1-based month number is already the next month.
  return new Date(Date.UTC(Number(m[1]), Number(m[2]), 1));
}

const monthName = (period: string) =>
  new Intl.DateTimeFormat('en-GB', { month: 'long', year: 'numeric', timeZone: 'UTC' }).format(resetsAtOf(period).getTime() - 1);

/** `1 May 2024, 00:00 UTC`: a reset is always at midnight UTC. */
const resetDay = (d: Date) =>
  `${new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' }).format(d)}, 00:00 UTC`;

/** What the account runs into at 100% of the allowance, and what it can do about it. */
function atLimit(f: UsageAlertFacts, resets: string): string[] {
  const when = f.threshold === 100 ? 'Your allowance is used up, so from now on' : 'Once the allowance is used up,';
  const refused = `calls are refused with HTTP 429 credits_exhausted (no data and no charge) until the reset on ${resets}`;
  const p = f.plan;
  if (!p) {
    return [
      `${when} calls draw on prepaid credits (credit packs) first. After that they are billed as overage if ` +
        `you have turned overage on; otherwise ${refused}.`,
    ];
  }
  const prepaid = p.prepaid > 0 ? `calls draw on your ${plural(p.prepaid, 'prepaid credit')}; once those are gone, ` : '';
  const rate = PLANS[p.tier].overage_per_1k_usd;
  if (p.allow_overage && rate !== null) {
    return [
      `${when} ${prepaid}calls keep working and are billed as overage at ${usd(rate)} per 1,000 credits until the reset on ${resets}.`,
      `If you would rather stop than pay overage, turn overage off: calls are then refused with HTTP 429 credits_exhausted instead.`,
    ];
  }
  const options = creditOptions({ tier: p.tier, pro: p.pro, allow_overage: p.allow_overage, allowance: f.allowance });
  const why = rate === null ? `The ${p.tier} tier has no overage: this is a hard stop.` : 'Overage is off for this account.';
  return [`${when} ${prepaid}${refused}. ${why}`, `To keep calling without interruption, ${joinOr(options)}.`];
}

/**
 * The subject and plain-text body of a usage-alert email, with the numbers the account will
 * want: used and allowance, what is left, the reset instant and what happens at 100%.
 */
export function usageAlertMessage(f: UsageAlertFacts): { subject: string; text: string } {
  const resetsAt = resetsAtOf(f.period);
  const resets = resetDay(resetsAt);
  // One figure for subject and body: the share used when the alert was raised. A single call can
  // carry usage past the threshold (75% crossed at 88%), and the mail says what is true.
  const pct = Math.floor((f.used * 100) / f.allowance);
  const left = f.allowance - f.used;
  const planLabel = f.plan ? ` (${f.plan.tier} plan${f.plan.pro ? ' with Pro membership' : ''})` : '';
  const rows: [string, string][] = [
    ['Used this month', credits(f.used)],
    ['Monthly allowance', `${credits(f.allowance)}${planLabel}`],
    ['Left this month', left >= 0 ? credits(left) : `none: ${credits(-left)} over, billed as overage`],
  ];
  if (f.plan) rows.push(['Prepaid credits', count(f.plan.prepaid)]);
  rows.push(['Allowance resets', `${resets} (${resetsAt.toISOString()})`]);
  const width = Math.max(...rows.map(([k]) => k.length)) + 2;
  const thresholds = USAGE_ALERT_THRESHOLDS.map((t) => `${t}%`);
  const everyThreshold = `${thresholds.slice(0, -1).join(', ')} and ${thresholds[thresholds.length - 1]}`;
  const lines = [
    'Hello,',
    '',
    `Your Scores API account ${f.account_id} has used ${pct}% of its monthly credit allowance for ${monthName(f.period)}` +
      (pct > f.threshold ? `, past the ${f.threshold}% alert threshold.` : '.'),
    '',
    ...rows.map(([k, v]) => `  ${`${k}:`.padEnd(width)}${v}`),
    '',
    ...atLimit(f, resets).flatMap((p) => [p, '']),
    'Check your balance at any time with GET /v1/usage; every API response also carries the ' +
      'X-Credits-Remaining header (allowance left plus prepaid credits).',
    '',
    `You get one email at each of ${everyThreshold} of your allowance per month.`,
    '',
  ];
  return {
    subject: `You have used ${pct}% of your ${count(f.allowance)} monthly credits`,
    text: lines.join('\n'),
  };
}

// ---------------------------------------------------------------------------------------------
// The projection

type Handled = LedgerEvent | UsageAlertEmailed;

const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
const isThreshold = (x: unknown): x is UsageAlertThreshold => (USAGE_ALERT_THRESHOLDS as readonly unknown[]).includes(x);

function accountOf(streamId: string, prefix: string): string | null {
  return streamId.startsWith(prefix) && streamId.length > prefix.length ? streamId.slice(prefix.length) : null;
}

async function updatePlan(ctx: ProjectionContext, accountId: string, change: (p: AlertAccountDoc) => AlertAccountDoc | null) {
  const current = await ctx.get(alertAccounts, accountId);
  if (!current) return;
  const next = change(current);
  if (next) ctx.upsert(alertAccounts, next);
}

async function alertRaised(raw: RecordedEvent, accountId: string, ctx: ProjectionContext): Promise<void> {
  const d = (raw.data ?? {}) as Partial<Record<string, unknown>>;
  if (typeof d.period !== 'string' || !PERIOD.test(d.period) || !isThreshold(d.threshold)) return;
  if (!isCount(d.used) || !isCount(d.allowance) || d.allowance === 0) return;
  // Applied before (a re-delivery): keep the doc, whose status may already be `sent`.
  if (await ctx.get(mailOutbox, raw.id)) return;
  const [account, plan] = await Promise.all([ctx.get(accounts, accountId), ctx.get(alertAccounts, accountId)]);
  const to = account?.email?.trim() || null;
  const { subject, text } = usageAlertMessage({
    account_id: accountId,
    period: d.period,
    threshold: d.threshold,
    used: d.used,
    allowance: d.allowance,
    plan: plan ? { tier: plan.tier, pro: plan.pro, allow_overage: plan.allow_overage, prepaid: plan.prepaid } : null,
  });
  ctx.upsert(mailOutbox, {
    id: raw.id,
    account_id: accountId,
    to,
    subject,
    text,
    period: d.period,
    threshold: d.threshold,
    status: to ? 'pending' : 'no_address',
    created_at: typeof d.at === 'string' ? d.at : raw.recordedAt,
    sent_at: null,
  });
}

export const usageAlertsProjection: Projection = {
  name: 'usage-alerts',
  collections: [mailOutbox, alertAccounts],
  eventTypes: [
    'LedgerOpened',
    'PlanChanged',
    'ProMembershipChanged',
    'OverageSwitched',
    'PackPurchased',
    'CreditsDebited',
    'CreditsDebitedBatch',
    'UsageAlertRaised',
    'UsageAlertEmailed',
  ],
  async apply(raw: RecordedEvent, ctx: ProjectionContext) {
    const event = raw as unknown as Handled;
    if (event.type === 'UsageAlertEmailed') {
      const accountId = accountOf(raw.streamId, MAIL_STREAM_PREFIX);
      const d = event.data;
      if (!accountId || typeof d?.alert_event_id !== 'string') return;
      const doc = await ctx.get(mailOutbox, d.alert_event_id);
      if (!doc || doc.account_id !== accountId || doc.status === 'sent') return;
      ctx.upsert(mailOutbox, { ...doc, status: 'sent', to: typeof d.to === 'string' ? d.to : doc.to, sent_at: typeof d.at === 'string' ? d.at : raw.recordedAt });
      return;
    }
    const accountId = accountOf(raw.streamId, LEDGER_STREAM_PREFIX);
    if (!accountId || raw.data === null || typeof raw.data !== 'object') return;
    switch (event.type) {
      case 'LedgerOpened':
        if (!isTier(event.data.tier)) return;
        ctx.upsert(alertAccounts, {
          account_id: accountId,
          tier: event.data.tier,
          pro: event.data.pro === true,
          // Always false today (a ledger opens on a hard stop); read it anyway, an event is a fact.
          allow_overage: (event.data.allow_overage as boolean) === true,
          prepaid: 0,
        });
        return;
      case 'PlanChanged': {
        const tier = event.data.tier;
        if (isTier(tier)) await updatePlan(ctx, accountId, (p) => ({ ...p, tier }));
        return;
      }
      case 'ProMembershipChanged': {
        const pro = event.data.pro === true;
        await updatePlan(ctx, accountId, (p) => ({ ...p, pro }));
        return;
      }
      case 'OverageSwitched': {
        const on = event.data.allow_overage === true;
        await updatePlan(ctx, accountId, (p) => ({ ...p, allow_overage: on }));
        return;
      }
      case 'PackPurchased': {
        const n = event.data.credits;
        if (isCount(n)) await updatePlan(ctx, accountId, (p) => ({ ...p, prepaid: p.prepaid + n }));
        return;
      }
      case 'CreditsDebited': {
        // The most frequent event of all: only a draw on prepaid credits matters here.
        const n = event.data.from_prepaid;
        if (isCount(n) && n > 0) await updatePlan(ctx, accountId, (p) => ({ ...p, prepaid: Math.max(0, p.prepaid - n) }));
        return;
      }
      case 'CreditsDebitedBatch': {
        const drawn = event.data.calls?.from_prepaid;
        const n = Array.isArray(drawn) ? drawn.reduce((sum: number, x) => sum + (isCount(x) ? x : 0), 0) : 0;
        if (n > 0) await updatePlan(ctx, accountId, (p) => ({ ...p, prepaid: Math.max(0, p.prepaid - n) }));
        return;
      }
      case 'UsageAlertRaised':
        await alertRaised(raw, accountId, ctx);
        return;
      case 'AllowancePeriodOpened':
      case 'LedgerPeriodClosed':
      case 'PlanCancellationScheduled':
      case 'PlanDowngradeScheduled':
      case 'ProrationCharged':
        return;
      default: {
        const _exhaustive: never = event;
        return _exhaustive;
      }
    }
  },
};
