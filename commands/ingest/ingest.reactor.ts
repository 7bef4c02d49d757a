import type { Clock } from '../../src/core/clock.js';
import type { BusSubscription, EventBus } from '../../src/core/event-bus.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { ingestRows } from './ingest.handler.js';
import { IngestValidationError, validateRecord } from './ingest.parser.js';

export const INGEST_TOPIC = 'scores.ingest';
export const INGEST_DLQ_TOPIC = 'scores.ingest.dlq';
/** Appends tried for one row before it goes to the dead letters (backoff 0.2, 0.4, 0.8, 1.6 s). */
const INGEST_ATTEMPTS = 5;

/**
 * Takes ingest messages from the bus: each message value is one JSON record, exactly a line of a
 * JSONL ingest file (with its `type`). A message that cannot be ingested goes to the dead-letter
 * topic with the reason in its headers and body; the consumer carries on with the next one.
 */
export function startIngestConsumer(deps: {
  bus: EventBus;
  store: EventStore;
  clock: Clock;
  group?: string;
  log?: (msg: string) => void;
}): Promise<BusSubscription> {
  const { bus, store, clock } = deps;
  const deadLetter = async (value: string, key: string | null, reason: string) => {
    await bus.publish(INGEST_DLQ_TOPIC, [
      {
        key,
        value: JSON.stringify({ reason, message: value, failed_at: clock.now().toISOString() }),
        headers: { reason, source_topic: INGEST_TOPIC },
      },
    ]);
    deps.log?.(`ingest message dead-lettered: ${reason}`);
  };
  return bus.subscribe({
    topic: INGEST_TOPIC,
    group: deps.group ?? 'scores-ingest',
    fromBeginning: true,
    handler: async (message) => {
      let raw: unknown;
      try {
        raw = JSON.parse(message.value);
      } catch {
        return deadLetter(message.value, message.key, 'message is not valid JSON');
      }
      const checked = validateRecord(raw, 1, null);
      if (!checked.ok) return deadLetter(message.value, message.key, checked.error.reason);
      for (let attempt = 1; ; attempt++) {
        try {
          await ingestRows(store, clock, [checked.row]);
          return;
        } catch (err) {
          if (err instanceof IngestValidationError) return deadLetter(message.value, message.key, err.errors.map((e) => e.reason).join('; '));
          // A store that did not answer, or a race with another consumer during a rebalance, passes:
          // try again before giving the row up to the dead letters (where it was sent at once before,
          // and restatements were lost from the log across worker kills).
          if (attempt === INGEST_ATTEMPTS) return deadLetter(message.value, message.key, String(err));
          await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
        }
      }
    },
  });
}
