import { Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type UsageResponse, run } from './get-usage.query.js';

@Route('v1/usage')
@Tags('Account')
@Security('api_key', ['usage'])
export class GetUsageController extends MeteredController {
  /**
   * Your plan, this month's usage and balances, and the live rate card. Free.
   * @summary Usage, balances and rate card
   */
  @Get()
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key')
  public async getUsage(@Request() req: AuthedRequest): Promise<UsageResponse> {
    return this.serve(req, run);
  }
}
