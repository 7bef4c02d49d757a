/**
 * The embedded request log's thread: owns its file's connection, so that writing a batch of calls,
 * a listing and a prune never run on the event loop that serves the metered calls. Messages
 * {id, op, args}, answered {id, result} or {id, failure}, in order; {close} closes the file.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './database.js';
import type { EncodedCalls } from './request-log-batch.js';
import { RequestLogDb } from './request-log-db.js';

type Op = 'append' | 'list' | 'prune' | 'forget' | 'size';

// The log is written behind the calls, never in their way: on Linux a thread has a priority of its
// own, and this one yields the CPU to the threads that serve (under full load its calls wait in the
// buffer, bounded: request-log.ts). A system that refuses it leaves the thread as it was.
try {
  setPriority(19);
} catch {
  // not permitted here: the thread keeps the process's priority
}
const db = openSqlite((workerData as { file: string }).file, { synchronous: 'NORMAL' });
// A log of calls is read a page at a time: a small cache (the store's default is 256 MiB).
db.pragma('cache_size = -16384');
const log = new RequestLogDb(db);

function run(op: Op, args: unknown[]): unknown {
  switch (op) {
    case 'append':
      return log.appendEncoded(args[0] as EncodedCalls);
    case 'list':
      return log.list(args[0] as Parameters<RequestLogDb['list']>[0]);
    case 'prune':
      return log.prune(args[0] as number, args[1] as number);
    case 'forget':
      return log.forget(args[0] as string);
    case 'size':
      return log.size();
    default: {
      const _exhaustive: never = op;
      return _exhaustive;
    }
  }
}

parentPort!.on('message', (msg: { id: number; op: Op; args: unknown[] } | { close: true }) => {
  if ('close' in msg) {
    db.close();
    parentPort!.postMessage({ closed: true });
    return;
  }
  try {
    parentPort!.postMessage({ id: msg.id, result: run(msg.op, msg.args) });
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, failure: { name: (err as Error).name, message: (err as Error).message } });
  }
});
