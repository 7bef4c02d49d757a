import type { RequestLog } from '../../core/request-log.js';
import type { RequestRecord } from '../../core/request-log.port.js';
import { RATE_CARD, RATE_KEYS, type RateKey } from '../../domain/rate-card.js';
import type { Charge, Meter, Principal } from '../../web/meter.port.js';

/** What a call was, besides who made it and what it cost: its face, operation, route and outcome. */
export type CallOutcome = Pick<RequestRecord, 'channel' | 'operation' | 'tool' | 'method' | 'path' | 'status' | 'code'>;

/** What a call was, without its outcome: its face, operation, route. */
export type CallRoute = Omit<CallOutcome, 'status' | 'code'>;

/** The rate-card key of each MCP tool. */
const TOOL_KEYS: ReadonlyMap<string, RateKey> = new Map(RATE_KEYS.flatMap((k) => (RATE_CARD[k].mcp_tool ? [[RATE_CARD[k].mcp_tool, k] as const] : [])));

/** The rate-card key an MCP tool name is the twin of; undefined for a name no tool has. */
export const toolKeyOf = (name: string): RateKey | undefined => TOOL_KEYS.get(name);

/**
 * Records each call of a valid key in the request log as it ends (the REST middleware in
 * src/app/http/request-recording.ts, the MCP route per tool call). What a call was charged is
 * noted by the meter this recorder wraps (`meter`), by the call's principal, which is its own
 * object for each call (an MCP batch gives each request one): the charge path itself is unchanged.
 * `enabled` false (`REQUEST_LOG=off`): nothing is recorded.
 */
export class RequestRecorder {
  private readonly charged = new WeakMap<Principal, number>();

  constructor(
    readonly log: RequestLog,
    readonly enabled: boolean,
  ) {}

  /** `inner`, with each charge's cost noted against its principal (`inner` stays reachable: a test hooks the meter it wraps). */
  meter<M extends Meter>(inner: M): Meter & { readonly inner: M } {
    const charged = this.charged;
    return {
      inner,
      authenticate: (key, requestId, client) => inner.authenticate(key, requestId, client),
      remaining: (principal) => inner.remaining(principal),
      usage: (principal) => inner.usage(principal),
      keySpend: (principal) => inner.keySpend(principal),
      // A dry run charges nothing: its call is recorded with 0 credits.
      quote: (principal, endpoint, quantity, channel) => inner.quote(principal, endpoint, quantity, channel),
      async charge(principal, endpoint, quantity, channel): Promise<Charge> {
        const charge = await inner.charge(principal, endpoint, quantity, channel);
        charged.set(principal, (charged.get(principal) ?? 0) + charge.cost);
        return charge;
      },
    };
  }

  /** One call of `principal` by `route`, begun at `started` (`performance.now()`), ended now with `status` and `code`. */
  record(principal: Principal, route: CallRoute, status: number, code: string | null, started: number): void {
    if (!this.enabled) return;
    // One object of one shape per call, its fields named (no spreads): it is made on every call.
    this.log.record({
      request_id: principal.request_id,
      account_id: principal.account_id,
      key_id: principal.key_id,
      at: this.log.now(),
      channel: route.channel,
      operation: route.operation,
      tool: route.tool,
      method: route.method,
      path: route.path,
      status,
      code,
      credits: this.charged.get(principal) ?? 0,
      latency_ms: Math.round((performance.now() - started) * 10) / 10,
    });
  }
}
