/**
 * The event log's writer thread: owns the write connection, so a commit's fsync never blocks the
 * event loop that serves requests. Messages: {file} once, then {id, groups, recordedAt}; it posts
 * {ready} once its connection is open.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './database.js';
import { EVENTS_DDL, addRecordKeyColumn, groupWriter, type SerializedGroup } from './event-writes.js';

const db = openSqlite((workerData as { file: string }).file, { synchronous: 'FULL' });
db.exec(EVENTS_DDL);
addRecordKeyColumn(db);
const write = groupWriter(db);
parentPort!.postMessage({ ready: true });

parentPort!.on('message', (msg: { id: number; groups: SerializedGroup[]; recordedAt: string } | { close: true }) => {
  if ('close' in msg) {
    db.close();
    parentPort!.postMessage({ closed: true });
    return;
  }
  try {
    parentPort!.postMessage({ id: msg.id, outcomes: write(msg.groups, msg.recordedAt) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, failure: { name: (err as Error).name, message: (err as Error).message } });
  }
});
