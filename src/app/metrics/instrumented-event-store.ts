import { ConcurrencyError } from '../../core/errors.js';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StreamAppend,
  SubscribeOptions,
  Subscription,
} from '../../core/event-store.port.js';
import type { Metrics } from './metrics.js';

/**
 * An EventStore that times every append (`scores_event_store_append_seconds`) and tells the
 * metrics what was appended (webhook deliveries, export runs); everything else goes straight to
 * the adapter. Wrapped around whichever adapter the composition root picks.
 */
export class InstrumentedEventStore implements EventStore {
  constructor(
    private readonly inner: EventStore,
    private readonly metrics: Metrics,
  ) {}

  append(streamId: string, events: NewEvent[], expectedRevision?: ExpectedRevision): Promise<AppendResult> {
    return this.timed('append', events, () => this.inner.append(streamId, events, expectedRevision));
  }

  appendMany(appends: StreamAppend[]): Promise<AppendResult[]> {
    return this.timed(
      'append_many',
      appends.flatMap((a) => a.events),
      () => this.inner.appendMany(appends),
    );
  }

  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    return this.inner.readStream(streamId, options);
  }

  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    return this.inner.readAll(options);
  }

  headPosition(): Promise<string | null> {
    return this.inner.headPosition();
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    return this.inner.subscribeToAll(options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private async timed<T>(operation: string, events: readonly NewEvent[], write: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      const result = await write();
      this.metrics.appendDuration.observe({ operation, outcome: 'ok' }, (performance.now() - start) / 1000);
      this.metrics.appended(events);
      return result;
    } catch (err) {
      const outcome = err instanceof ConcurrencyError ? 'conflict' : 'error';
      this.metrics.appendDuration.observe({ operation, outcome }, (performance.now() - start) / 1000);
      throw err;
    }
  }
}
