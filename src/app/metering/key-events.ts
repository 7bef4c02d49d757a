/**
 * Key events straight from the log, for a process whose key read model may be projected by
 * another process (API replicas on a shared log): a key revoked anywhere is refused here as soon
 * as the log wakes this follower (PostgreSQL's LISTEN/NOTIFY), however far behind the read model
 * is and whatever the key-lookup cache holds (LedgerMeter.keyEventsSeen).
 */
import type { EventStore, RecordedEvent, Subscription } from '../../core/event-store.port.js';
import { KEY_STATUS_EVENTS } from './meter.js';

export interface KeyEventsFollower {
  stop(): Promise<void>;
}

/**
 * Follows the log from its head, handing each batch to `seen`; after a failure it follows again
 * from the last event it handed over, `retryMs` later (default 1 s).
 */
export async function followKeyEvents(
  events: EventStore,
  seen: (batch: readonly RecordedEvent[]) => void,
  options: { onError?(err: unknown): void; retryMs?: number } = {},
): Promise<KeyEventsFollower> {
  let after = await events.headPosition();
  let subscription: Subscription | null = null;
  let retry: NodeJS.Timeout | null = null;
  let stopped = false;
  const follow = () => {
    subscription = events.subscribeToAll({
      after,
      // Of the rest (the score events are most of the log's bytes) the type and stream are enough.
      dataTypes: KEY_STATUS_EVENTS,
      onEvents: async (batch) => {
        seen(batch);
        after = batch[batch.length - 1]!.position;
      },
      onError: (err) => {
        options.onError?.(err);
        subscription = null;
        if (!stopped) retry = setTimeout(follow, options.retryMs ?? 1000);
      },
    });
  };
  follow();
  return {
    async stop() {
      stopped = true;
      if (retry) clearTimeout(retry);
      await subscription?.stop();
    },
  };
}
