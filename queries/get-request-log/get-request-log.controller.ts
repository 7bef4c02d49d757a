import { Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type RequestLogPageResponse, run } from './get-request-log.query.js';

@Route('v1/requests')
@Tags('Account')
@Security('api_key', ['requests'])
export class GetRequestLogController extends MeteredController {
  /**
   * Your account's calls of the last 30 days, REST and MCP, answered and refused alike, newest
   * first: when, which key, which operation, the status or the refusal's problem code, the credits
   * charged, the latency and the request id (your responses' `X-Request-Id`). Free. A call shows
   * here within a second or so of its answer (at once on the replica that answered it).
   * @summary Your request log
   * @param key Only the calls of this key of yours, named by its prefix (`sk_live_` and 6 characters, as the account page shows it).
   * @param status Only calls answered with this status class: `2xx`, `3xx`, `4xx` or `5xx`.
   * @param operation Only calls of this rate-card key (`scores`, `history`, …), over REST and MCP.
   * @param day Only calls of this UTC day, `YYYY-MM-DD`.
   * @param request_id Only the call with this request id.
   * @param limit Calls per page (default 50, max 500).
   * @param cursor `next_cursor` of the previous page (with the same filters).
   */
  @Get()
  @Response<ProblemDetails>(400, 'A malformed filter or cursor, or limit not an integer or below 1')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key')
  @Response<ProblemDetails>(422, 'limit above 500 (limit_exceeded)')
  public async getRequestLog(
    @Request() req: AuthedRequest,
    @Query() key?: string,
    @Query() status?: string,
    @Query() operation?: string,
    @Query() day?: string,
    @Query() request_id?: string,
    @Query() limit?: string,
    @Query() cursor?: string,
  ): Promise<RequestLogPageResponse> {
    return this.serve(req, (call) => run(call, { key, status, operation, day, request_id, limit, cursor }));
  }
}
