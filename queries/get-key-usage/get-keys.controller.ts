import { Example, Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { MeteredController } from '../shared/metered-controller.js';
import { run, type ApiKeysResponse } from './get-keys.query.js';

/** The read side of `/v1/keys` (changing a key's limits is `commands/manage-keys`). */
@Route('v1/keys')
@Tags('Account')
@Security('api_key', ['keys'])
export class GetKeysController extends MeteredController {
  /**
   * Your account's API keys: each one's limits (credits per UTC day and month, expiry, read-only,
   * operations), what it spent today and this month, what it may still spend, and its last charged
   * call. The spend is the ledger's own, what the key's next call is decided on. Free.
   * @summary Your API keys, their limits and spend
   */
  @Get()
  @Example<ApiKeysResponse>({
    keys: [
      {
        key_id: 'key_3kTz9c2Lb',
        name: 'Research agent',
        prefix: 'sk_live_Q9x2Lm',
        status: 'active',
        current: false,
        daily_credit_limit: 1000,
        monthly_credit_limit: null,
        expires_at: '2026-12-31T23:59:59.000Z',
        scope: 'read_only',
        operations: ['scores', 'history'],
        spent_today: 250,
        spent_this_month: 4100,
        budget_remaining: 750,
        last_used_at: '2026-11-27T10:42:07.000Z',
      },
    ],
  })
  @Response<ProblemDetails>(400, 'A query parameter (this endpoint takes none)')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden), expired key (key_expired), or a key restricted to other operations (key_scope_forbidden)')
  public async listKeys(@Request() req: AuthedRequest): Promise<ApiKeysResponse> {
    return this.serve(req, (call) => run(call));
  }
}
