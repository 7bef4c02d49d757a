/**
 * EventBus port: publish/subscribe between processes with consumer groups.
 * Adapters: infra/memory (in-process default), infra/kafka.
 */
export interface BusMessage {
  /** Partition / ordering key (a stream id, a ticker). */
  key: string | null;
  value: string;
  headers?: Record<string, string>;
}

export interface BusSubscription {
  stop(): Promise<void>;
}

export interface SubscribeBusOptions {
  topic: string;
  /** Each group receives every message once; members of one group share the messages. */
  group: string;
  /** Start from the earliest retained message when the group has no committed offset. */
  fromBeginning?: boolean;
  /**
   * A message is handled once this resolves. When it throws, the error is reported and the
   * message is handed again after a pause, later messages of its key waiting, until it succeeds;
   * when the member stops first, the group's next member gets it (src/core/bus-redelivery.ts).
   * A LeaseLostError is not handed again: its job is stopping, the next member gets the message.
   * A message that can never succeed is the handler's to route (a dead-letter topic, say).
   */
  handler(message: BusMessage): Promise<void>;
}

export interface EventBus {
  publish(topic: string, messages: BusMessage[]): Promise<void>;
  subscribe(options: SubscribeBusOptions): Promise<BusSubscription>;
  close(): Promise<void>;
}
