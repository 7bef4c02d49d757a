import { Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type LedgerPageResponse, run } from './get-usage-ledger.query.js';

@Route('v1/usage/ledger')
@Tags('Account')
@Security('api_key', ['usage_ledger'])
export class GetUsageLedgerController extends MeteredController {
  /**
   * Your own credit ledger, newest first: every charge (request id, endpoint, channel, cost and
   * where it was drawn from), pack, plan change and usage alert. Free. Each entry carries its
   * SHA-256 `hash` and the previous entry's `prev_hash`, and `data` exactly as hashed, so you can
   * verify the chain yourself: `sha256hex(prev_hash + "\n" + kind + "\n" + canonicalJson(data
   * without "hash")) == hash`, and each `prev_hash` equals the `hash` of the entry before it.
   * `signed_head` is the head of the whole ledger (its newest line) signed now by the service's
   * Ed25519 key (keys at `/.well-known/scores-ledger-keys.json`): keep one, and a later rewrite of
   * any line up to it shows.
   * @summary Your credit ledger
   * @param month Calendar month `YYYY-MM` (UTC); default: every month.
   * @param limit Entries per page (default 100, max 1000).
   * @param cursor `next_cursor` of the previous page.
   */
  @Get()
  @Response<ProblemDetails>(400, 'Malformed month or cursor, or limit not an integer or below 1')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key')
  @Response<ProblemDetails>(422, 'limit above 1000 (limit_exceeded)')
  public async getUsageLedger(
    @Request() req: AuthedRequest,
    @Query() month?: string,
    @Query() limit?: string,
    @Query() cursor?: string,
  ): Promise<LedgerPageResponse> {
    return this.serve(req, (call) => run(call, month, limit, cursor));
  }
}
