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
  handler(message: BusMessage): Promise<void>;
}

export interface EventBus {
  publish(topic: string, messages: BusMessage[]): Promise<void>;
  subscribe(options: SubscribeBusOptions): Promise<BusSubscription>;
  close(): Promise<void>;
}
