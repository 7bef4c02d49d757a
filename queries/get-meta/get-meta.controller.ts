import { Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type MetaResponse, run } from './get-meta.query.js';

@Route('v1/meta')
@Tags('Account')
@Security('api_key', ['meta'])
export class GetMetaController extends MeteredController {
  /**
   * Dataset information: what it is, its universe, a definition of every field, the depth of the
   * history with point-in-time restatement statistics, and where the licence, docs and MCP server
   * are. Free; no `as_of` (it describes the dataset, not a day's data).
   * @summary Dataset information
   */
  @Get()
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  public async getMeta(@Request() req: AuthedRequest): Promise<MetaResponse> {
    return this.serve(req, run);
  }
}
