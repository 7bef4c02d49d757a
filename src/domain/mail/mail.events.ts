/** Mail events: one stream per account, `mail-<account_id>`, written by the usage-alert reactor. */
export const MAIL_STREAM_PREFIX = 'mail-';
/** One stream per account: `mail-<account_id>`. */
export const mailStream = (accountId: string) => `${MAIL_STREAM_PREFIX}${accountId}`;

/** The alert's email was handed to the mail port (`to` as sent; `at` by the reactor's clock). */
export interface UsageAlertEmailed {
  type: 'UsageAlertEmailed';
  data: { alert_event_id: string; to: string; at: string };
}
