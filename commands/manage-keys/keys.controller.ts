import { Body, Example, Middlewares, Patch, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { requireKeyMayManageKeys, type KeyScope } from '../../src/domain/accounts/key-limits.js';
import { CommandController } from '../shared/command-controller.js';
import { jsonBody } from '../shared/json-body.js';
import { setKeyLimits } from './keys.handler.js';

/** A change of a key's limits: a field left out stays as it is; null removes it. */
export interface KeyLimitsRequest {
  /**
   * Credits the key may spend per UTC day; null removes the daily limit.
   * @isInt
   * @minimum 1
   * @maximum 1000000000
   */
  daily_credit_limit?: number | null;
  /**
   * Credits the key may spend per UTC month; null removes the monthly limit.
   * @isInt
   * @minimum 1
   * @maximum 1000000000
   */
  monthly_credit_limit?: number | null;
  /**
   * When the key stops working (ISO 8601; without a zone, UTC), in the future; null: never.
   * @example "2026-12-31T23:59:59Z"
   */
  expires_at?: string | null;
  /** `read_only`: GET calls only (no webhook or key changes); `all`: whatever the plan allows. */
  scope?: KeyScope;
  /**
   * The only operations the key may call: rate-card keys (`GET /v1/usage` lists them) or MCP tool
   * names; null: all its scope allows.
   * @example ["scores", "get_score_history"]
   */
  operations?: string[] | null;
}

export interface KeyLimitsResponse {
  key_id: string;
  /** False when the key had these limits already (nothing was recorded). */
  changed: boolean;
  /** @isInt */
  daily_credit_limit: number | null;
  /** @isInt */
  monthly_credit_limit: number | null;
  /** @format date-time */
  expires_at: string | null;
  scope: KeyScope;
  /** Rate-card keys (MCP tool names given are kept as the rate-card keys they mirror). */
  operations: string[] | null;
}

/** The write side of `/v1/keys` (the listing is `queries/get-key-usage`). */
@Route('v1/keys')
@Tags('Account')
@Security('api_key', ['keys'])
export class ManageKeysController extends CommandController {
  /**
   * Sets the limits of one of your account's keys: credits per UTC day and per UTC month, an
   * expiry, read-only, a list of operations. A field left out stays as it is, null removes it. The
   * change holds on every API process within seconds; a call over a credit limit is refused with
   * 429 `key_budget_exhausted`, an expired key with 403 `key_expired`, a restricted call with 403
   * `key_scope_forbidden`. Only a key without any limit or restriction may change keys (a bounded
   * key could lift its own bounds). Free.
   * @summary Set a key's limits
   * @param key_id The key's `key_id` (`GET /v1/keys` lists them).
   * @example key_id "key_3kTz9c2Lb"
   */
  @Patch('{key_id}')
  @Middlewares(jsonBody)
  @Example<KeyLimitsResponse>({ key_id: 'key_3kTz9c2Lb', changed: true, daily_credit_limit: 1000, monthly_credit_limit: 20000, expires_at: '2026-12-31T23:59:59.000Z', scope: 'read_only', operations: null })
  @Response<ProblemDetails>(400, 'Body not JSON, an unknown field, a limit not a whole number from 1, an expiry not an instant in the future, an unknown scope or operation')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden), expired key (key_expired), or a key with limits or restrictions of its own (key_scope_forbidden)')
  @Response<ProblemDetails>(404, 'No key of your account with that id (not_found)')
  @Response<ProblemDetails>(409, 'The key is revoked (conflict)')
  @Response<ProblemDetails>(413, 'Body over 16 KiB (payload_too_large)')
  @Response<ProblemDetails>(415, 'Body not application/json (unsupported_media_type)')
  public async setKeyLimits(@Request() req: AuthedRequest, @Path() key_id: string, @Body() body: KeyLimitsRequest): Promise<KeyLimitsResponse> {
    return this.serve(req, async (caller) => {
      requireKeyMayManageKeys(caller.limits);
      const set = await setKeyLimits(this.ctx, key_id, body, caller.account_id);
      await this.ctx.keysInForce(caller.account_id);
      return { key_id: set.key_id, changed: set.changed, ...set.limits };
    });
  }
}
