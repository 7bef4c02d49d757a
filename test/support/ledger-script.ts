import { ledgerDecider } from '../../src/domain/ledger/ledger.decider.js';
import { AppError } from '../../src/core/errors.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { ledgerStream } from '../../src/domain/ledger/ledger.events.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';

/** Runs commands through the real decider and appends what it decides, as the metering handler does. */
export async function runLedger(events: EventStore, accountId: string, script: [LedgerCommand, string][]): Promise<string[]> {
  const refused: string[] = [];
  const stream = ledgerStream(accountId);
  for (const [command, now] of script) {
    const past = await events.readStream(stream);
    let decided;
    try {
      decided = ledgerDecider.decide(foldLedger(past), command, new Date(now));
    } catch (err) {
      if (err instanceof AppError && err.code === 'credits_exhausted') {
        refused.push(now);
        continue;
      }
      throw err;
    }
    if (decided.length === 0) continue;
    await events.append(
      stream,
      decided.map((e) => ({ type: e.type, data: e.data })),
      past.length ? past[past.length - 1]!.revision : 'no_stream',
    );
  }
  return refused;
}
