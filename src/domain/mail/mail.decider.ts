/**
 * An account's mail stream `mail-<account_id>`: each usage alert is recorded as emailed once. The
 * sender reads the stream before it sends and records the send after
 * (commands/send-usage-alerts/usage-alerts.reactor.ts); a second record of one alert adds nothing.
 */
import type { Decider } from '../../core/decider.js';
import type { UsageAlertEmailed } from './mail.events.js';

/** The alerts (by their event id) emailed so far. */
export type MailState = ReadonlySet<string>;

export const mailDecider: Decider<MailState, UsageAlertEmailed, UsageAlertEmailed> = {
  initialState: () => new Set(),
  evolve: (s, e) => (e.type === 'UsageAlertEmailed' && e.data ? new Set(s).add(e.data.alert_event_id) : s),
  decide: (s, command) => (s.has(command.data.alert_event_id) ? [] : [command]),
};
