import type { MeteredCall } from '../shared/query-context.js';
import { rateCardForUsage, type RateUnit } from '../../src/domain/rate-card.js';
import type { Coverage } from '../../src/domain/plans.js';
import type { UsageBalance } from '../../src/domain/ledger/ledger.figures.js';

export interface EntitlementsResponse {
  /**
   * Monthly credits; null = unmetered.
   * @isLong
   */
  credits: number | null;
  /**
   * How many days the data you see trails today.
   * @isInt
   */
  delay_days: number;
  /** The universe you see: `all`, or `top100` on the free tier. */
  coverage: Coverage;
  /**
   * Days of history you can reach; null = the full history.
   * @isInt
   */
  history_days: number | null;
}

export interface RateResponse {
  /** @isLong */
  credits: number;
  /** `call`, `row` or `constituent`. */
  unit: RateUnit;
  /** Method and path. */
  endpoint: string;
}

/** The rate card by rate-card key (`x-rate-card` of each operation in the OpenAPI document). */
export interface RateCardResponse {
  [rateKey: string]: RateResponse;
}

export interface UsageResponse extends UsageBalance {
  entitlements: EntitlementsResponse;
  /** Live credit cost of every endpoint, from the same table the metering charges by. */
  rate_card: RateCardResponse;
}

export async function run(call: MeteredCall): Promise<UsageResponse> {
  await call.charge('usage');
  const f = await call.ctx.meter.usage(call.principal);
  const { entitlements, period: _period, plan_ends_at: _ends, ...balance } = f;
  return {
    ...balance,
    entitlements: { ...entitlements },
    rate_card: rateCardForUsage(),
  };
}
