import type pg from 'pg';
import { openClient } from './database.js';

/**
 * LISTEN on one channel over a connection of its own, calling `onNotify` for every notification.
 * Losing the connection is not an error: readers poll meanwhile, and the next `ensure()` (at
 * most once per `retryMs`) listens again. Each time listening (re)starts `onNotify` is called
 * once, because appends committed while nobody listened sent their notifications to no one.
 */
export class Notifications {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private lastAttempt = -Infinity;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly onNotify: () => void,
    private readonly retryMs: number,
  ) {}

  get listening(): boolean {
    return this.client !== null;
  }

  ensure(): void {
    if (this.client || this.connecting || this.closed || Date.now() - this.lastAttempt < this.retryMs) return;
    this.lastAttempt = Date.now();
    this.connecting = this.listen()
      .catch(() => undefined)
      .finally(() => {
        this.connecting = null;
      });
  }

  private async listen(): Promise<void> {
    const client = await openClient(this.url, 'scores-listen');
    client.on('error', () => this.drop(client));
    client.on('end', () => this.drop(client));
    client.on('notification', () => this.onNotify());
    try {
      await client.query(`LISTEN ${this.channel}`);
    } catch (err) {
      this.drop(client);
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.onNotify();
  }

  private drop(client: pg.Client): void {
    if (this.client === client) this.client = null;
    client.removeAllListeners('notification');
    client.end().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting;
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners('notification');
      await client.end().catch(() => undefined);
    }
  }
}
