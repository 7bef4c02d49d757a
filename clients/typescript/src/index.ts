export { DEFAULT_BASE_URL, ScoresClient, type Credits, type Price, type RetryEvent, type RetryOptions, type ScoresApi, type ScoresClientOptions } from './client.js';
export { queryOf, type DateKind, type DateLike } from './dates.js';
export * from './errors.js';
export * from './generated/operations.js';
export { syncHistory, type HistoryPage, type HistoryRow, type SyncOptions, type SyncPage } from './sync.js';
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions, type WebhookEnvelope } from './webhooks.js';
export type { components, operations, paths } from './generated/schema.js';
