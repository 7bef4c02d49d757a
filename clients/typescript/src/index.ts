export { ScoresClient, type Credits, type RetryEvent, type RetryOptions, type ScoresApi, type ScoresClientOptions } from './client.js';
export * from './errors.js';
export { syncHistory, type HistoryPage, type HistoryRow, type SyncOptions, type SyncPage } from './sync.js';
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions, type WebhookEnvelope } from './webhooks.js';
export type { components, paths } from './generated/schema.js';
