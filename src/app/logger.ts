/**
 * The process's logger. On a terminal, one readable line per entry (pino-pretty: time, level,
 * message, the other fields as compact JSON; an access-log line reads `GET /v1/scores/:ticker 200
 * 3.1 ms`; colours unless NO_COLOR is set). Anywhere else (a pipe, a file, a log collector) JSON lines, one object per entry.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

/** Where the logger writes: stdout unless a test gives another stream. */
export interface LogOutput extends NodeJS.WritableStream {
  isTTY?: boolean;
}

/** The access log's fields that its pretty line already says in words. */
const SAID_IN_WORDS = ['method', 'route', 'status', 'ms'] as const;

interface AccessFields {
  msg?: unknown;
  method?: unknown;
  route?: unknown;
  status?: unknown;
  ms?: unknown;
}

const isAccessLine = (log: AccessFields) => log.msg === 'request' && typeof log.method === 'string';

function prettyStream(out: LogOutput) {
  const hideWhenSaid = (value: unknown, _key: string, log: AccessFields) => (isAccessLine(log) ? undefined : value);
  return pretty({
    destination: out,
    sync: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname',
    messageFormat: (log: AccessFields, messageKey: string) => {
      if (isAccessLine(log)) return `${String(log.method)} ${String(log.route)} ${String(log.status)} ${String(log.ms)} ms`;
      const msg = (log as Record<string, unknown>)[messageKey];
      return typeof msg === 'string' ? msg : msg === undefined ? '' : JSON.stringify(msg);
    },
    // Returning undefined drops a field from the single line (it is in the message already).
    customPrettifiers: Object.fromEntries(SAID_IN_WORDS.map((k) => [k, hideWhenSaid])) as never,
  });
}

/** JSON lines, or on a terminal (`out.isTTY`) readable lines. */
export function createLogger(level: string, out: LogOutput = process.stdout): Logger {
  if (out.isTTY) return pino({ level }, prettyStream(out));
  return out === process.stdout ? pino({ level }) : pino({ level }, out);
}

/**
 * The log of a serving process (`scores serve`, `scores worker`). On a terminal, as createLogger.
 * Otherwise its stdout is nothing but its JSON log stream: lines are written asynchronously, those
 * logged while a write is under way going out together in the next one, instead of one blocking
 * write(2) per line (the access log has one line per request). pino writes what is left when the
 * process exits.
 */
export function servingLog(level: string): Logger {
  if (process.stdout.isTTY) return createLogger(level);
  return pino({ level }, pino.destination({ dest: 1, sync: false }));
}
