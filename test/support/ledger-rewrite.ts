import { openSqlite } from '../../infra/sqlite/database.js';
import { computeHash, debitLines, GENESIS_HASH, ledgerStream, type CreditsDebitedBatch } from '../../src/domain/ledger/ledger.events.js';

/**
 * What an attacker with write access to the store does (issue 34): edits a line of the log, then
 * recomputes the hash of it and of every later event, so that the chain holds again.
 */
export function rewriteLedger(sqliteFile: string, accountId: string, edit: (type: string, data: Record<string, unknown>) => boolean): void {
  const db = openSqlite(sqliteFile);
  try {
    const rows = db.prepare('SELECT position, type, data FROM events WHERE stream_id = ? ORDER BY revision').all(ledgerStream(accountId)) as { position: number; type: string; data: string }[];
    const update = db.prepare('UPDATE events SET data = ? WHERE position = ?');
    let prev = GENESIS_HASH;
    let rewriting = false;
    for (const row of rows) {
      const data = JSON.parse(row.data) as Record<string, unknown> & { prev_hash: string; hash: string };
      rewriting = edit(row.type, data) || rewriting;
      if (rewriting) {
        data.prev_hash = prev;
        data.hash = row.type === 'CreditsDebitedBatch' ? debitLines(data as unknown as CreditsDebitedBatch['data'])!.at(-1)!.data.hash : computeHash(row.type, data);
        update.run(JSON.stringify(data), row.position);
      }
      prev = data.hash;
    }
  } finally {
    db.close();
  }
}

