import type { Projection } from '../src/core/projection.js';
import { apiKeysProjection } from './api-keys/api-keys.projection.js';
import { latestScoresProjection } from './latest-scores/latest-scores.projection.js';
import { referenceProjection } from './reference/reference.projection.js';
import { scoreHistoryProjection } from './score-history/score-history.projection.js';

/** Every projection the service runs, in the order they are applied to each batch. */
export function allProjections(): Projection[] {
  return [referenceProjection, scoreHistoryProjection, latestScoresProjection, apiKeysProjection];
}
