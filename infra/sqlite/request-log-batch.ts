/**
 * A batch of calls as the embedded request log sends it to its thread: numbers in one
 * Float64Array, whose buffer is transferred (not copied), the request ids as strings, and names
 * (accounts, keys, routes, codes) as small numbers this process gave them, each name sent once.
 * Posting the records as objects cost the serving thread a structured clone of every field of
 * every call (measured: most of what the log cost the metered path; docs/benchmarks.md).
 */
import type { RequestRecord } from '../../src/core/request-log.port.js';

/** The numbers per call: at, account, key, route, status, code, credits, latency. */
export const CALL_WIDTH = 8;

export interface EncodedCalls {
  /** Names first seen in this batch: [number, name as the store keeps it]. */
  names: [number, string][];
  /** CALL_WIDTH numbers per call; `code` is -1 for none. */
  numbers: Float64Array;
  requestIds: string[];
}

/** The store's name of a call's route: its channel, method, path template, operation and tool. */
export const routeName = (r: Pick<RequestRecord, 'channel' | 'method' | 'path' | 'operation' | 'tool'>): string =>
  `route:${JSON.stringify({ channel: r.channel, method: r.method, path: r.path, operation: r.operation, tool: r.tool })}`;

/** Numbers the sending side gives names, for the life of one thread. */
export class CallEncoder {
  private readonly numbers = new Map<string, number>();

  encode(records: readonly RequestRecord[]): EncodedCalls {
    const names: [number, string][] = [];
    const out = new Float64Array(records.length * CALL_WIDTH);
    const requestIds = new Array<string>(records.length);
    records.forEach((r, i) => {
      const o = i * CALL_WIDTH;
      out[o] = r.at;
      out[o + 1] = this.number(`account:${r.account_id}`, names);
      out[o + 2] = this.number(`key:${r.key_id}`, names);
      // A cheap key per route; its name (JSON) is made once, when the route is first seen.
      out[o + 3] = this.number(`\u0000${r.channel}\u0000${r.method}\u0000${r.path}\u0000${r.operation}\u0000${r.tool}`, names, () => routeName(r));
      out[o + 4] = r.status;
      out[o + 5] = r.code === null ? -1 : this.number(`code:${r.code}`, names);
      out[o + 6] = r.credits;
      out[o + 7] = r.latency_ms;
      requestIds[i] = r.request_id;
    });
    return { names, numbers: out, requestIds };
  }

  private number(key: string, names: [number, string][], name: () => string = () => key): number {
    let n = this.numbers.get(key);
    if (n === undefined) {
      n = this.numbers.size;
      this.numbers.set(key, n);
      names.push([n, name()]);
    }
    return n;
  }
}
