import type { Clock } from '../../src/core/clock.js';
import type { BusSubscription, EventBus } from '../../src/core/event-bus.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { IngestStreams, ingestRows } from './ingest.handler.js';
import { IngestValidationError, validateRecord } from './ingest.parser.js';

export const INGEST_TOPIC = 'scores.ingest';
export const INGEST_DLQ_TOPIC = 'scores.ingest.dlq';

/**
 * Takes ingest messages from the bus: each message value is one JSON record, exactly a line of a
 * JSONL ingest file (with its `type`). A message that cannot be ingested goes to the dead-letter
 * topic with the reason in its headers and body; the consumer carries on with the next one. Any
 * other failure (the store did not answer, the job's lease was lost) throws: the bus hands the
 * message again, here or to the job's next owner, and nothing valid reaches the dead letters.
 */
export function startIngestConsumer(deps: {
  bus: EventBus;
  store: EventStore;
  clock: Clock;
  group?: string;
  log?: (msg: string) => void;
}): Promise<BusSubscription> {
  const { bus, store, clock } = deps;
  // Kept for the consumer's life: a message costs what its row costs, not its day's history.
  const streams = new IngestStreams(store);
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
      try {
        await ingestRows(store, clock, [checked.row], streams);
      } catch (err) {
        if (err instanceof IngestValidationError) return deadLetter(message.value, message.key, err.errors.map((e) => e.reason).join('; '));
        throw err;
      }
    },
  });
}
