/**
 * A key change is in force on this process from the moment the caller is told it was made: the
 * key read model (which the meter's lookups read) holds the account's stream as it is now, 5 s at
 * most. Not the log head, which under load every other account's calls keep moving. Other API
 * processes enforce it as soon as they see the account's event (LedgerMeter.keyEventsSeen).
 */
import { apiKeysProjection } from '../../projections/api-keys/api-keys.projection.js';
import { lastPositionFrom, projectedUpTo } from '../../queries/shared/read-your-writes.js';
import type { EventStore } from '../core/event-store.port.js';
import type { ReadStore } from '../core/read-store.port.js';
import { accountStream } from '../domain/accounts/account.events.js';

export async function keysInForce(stores: { events: Pick<EventStore, 'readStream'>; reads: Pick<ReadStore, 'checkpoint'> }, accountId: string): Promise<void> {
  const position = await lastPositionFrom(stores.events, accountStream(accountId));
  await projectedUpTo(stores.reads, apiKeysProjection.name, position);
}
