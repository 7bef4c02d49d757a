import type { Projection } from '../src/core/projection.js';
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
