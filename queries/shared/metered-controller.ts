import { Controller } from '@tsoa/runtime';
import { CREDITS_HEADER } from '../../src/web/meter.port.js';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { DryRunPriced } from '../../src/web/call-budget.js';
import { HEADER } from '../../src/web/response-headers.js';
import { MeteredCall, type QueryContext } from './query-context.js';

/** Base of every `/v1` controller: the query context of its app and the metering of its calls. */
export abstract class MeteredController extends Controller {
  constructor(protected readonly ctx: QueryContext) {
    super();
  }

  /**
   * Runs a call for the request's caller over REST; its charge sets `X-Credits-Remaining` and
   * `X-Credits-Cost`. A dry run (`X-Dry-Run: true`) that meets no refusal is answered 204, its
   * price in those headers and no body: `T` stands for the body of a real call.
   */
  protected async serve<T>(req: AuthedRequest, run: (call: MeteredCall) => Promise<T>): Promise<T> {
    if (!req.user) throw new Error('controller reached without authentication');
    const call = new MeteredCall(this.ctx, req.user, 'rest', req.budget, req.rateKey);
    let body: T;
    try {
      body = await run(call);
    } catch (err) {
      if (!(err instanceof DryRunPriced)) throw err;
      this.setStatus(204);
      this.setHeader(CREDITS_HEADER, err.remaining);
      this.setHeader(HEADER.creditsCost, String(err.cost));
      if (err.keyBudgetRemaining !== null) this.setHeader(HEADER.keyBudgetRemaining, String(err.keyBudgetRemaining));
      return undefined as T;
    }
    if (call.remaining !== null) this.setHeader(CREDITS_HEADER, call.remaining);
    if (call.cost !== null) this.setHeader(HEADER.creditsCost, String(call.cost));
    if (call.keyBudgetRemaining !== null) this.setHeader(HEADER.keyBudgetRemaining, String(call.keyBudgetRemaining));
    return body;
  }
}
