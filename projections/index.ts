import type { Projection } from '../src/core/projection.js';
import type { ReadModelDef } from '../src/core/read-model-unit.js';
import { apiKeysProjection } from './api-keys/api-keys.projection.js';
import { latestScoresProjection } from './latest-scores/latest-scores.projection.js';
import { usageAlertsProjection } from './usage-alerts/usage-alerts.projection.js';
import { invoicesProjection } from './invoices/invoices.projection.js';
import { usageDaysProjection } from './usage-days/usage-days.projection.js';
import { keyUsageProjection } from './key-usage/key-usage.projection.js';
import { usageProjection } from './usage/usage.projection.js';
import { dailyScoresProjection } from './daily-scores/daily-scores.projection.js';
import { referenceProjection } from './reference/reference.projection.js';
import { scoreHistoryProjection } from './score-history/score-history.projection.js';
import { divergenceProjection } from './divergence/divergence.projection.js';
import { webhooksProjection } from './webhooks/webhooks.projection.js';
import { exportsProjection } from './exports/exports.projection.js';

/** Every projection the service runs, in the order they are applied to each batch. */
export function allProjections(): Projection[] {
  // usage-alerts reads the accounts apiKeys writes in the same batch: keep it after apiKeys.
  return [referenceProjection, scoreHistoryProjection, latestScoresProjection, dailyScoresProjection, apiKeysProjection, usageProjection, usageAlertsProjection, divergenceProjection, webhooksProjection, exportsProjection, invoicesProjection, usageDaysProjection, keyUsageProjection];
}

/**
 * The read models as units of work (`scores worker`: one lease each, docs/scaling.md): the
 * projections of a unit read each other's documents in the same batch (divergence reads prices and
 * daily scores, usage alerts read the accounts), so they are projected and committed together.
 */
export function readModelUnits(): ReadModelDef[] {
  const groups: Record<string, readonly Projection[]> = {
    'market-data': [referenceProjection, dailyScoresProjection, divergenceProjection],
    'score-history': [scoreHistoryProjection],
    'latest-scores': [latestScoresProjection],
    accounts: [apiKeysProjection, usageAlertsProjection],
    usage: [usageProjection],
    'usage-days': [usageDaysProjection],
    webhooks: [webhooksProjection],
    exports: [exportsProjection],
    invoices: [invoicesProjection],
    'key-usage': [keyUsageProjection],
  };
  // Each unit keeps allProjections' order.
  const order = allProjections();
  return Object.entries(groups).map(([name, projections]) => ({ name, projections: order.filter((p) => projections.includes(p)) }));
}
