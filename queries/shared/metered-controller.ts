import { Controller } from '@tsoa/runtime';
import { CREDITS_HEADER } from '../../src/web/meter.port.js';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredCall, type QueryContext } from './query-context.js';

/** Base of every `/v1` controller: the query context of its app and the metering of its calls. */
export abstract class MeteredController extends Controller {
  constructor(protected readonly ctx: QueryContext) {
    super();
  }

  /** Runs a call for the request's caller over REST; its charge sets `X-Credits-Remaining`. */
  protected async serve<T>(req: AuthedRequest, run: (call: MeteredCall) => Promise<T>): Promise<T> {
    if (!req.user) throw new Error('controller reached without authentication');
    const call = new MeteredCall(this.ctx, req.user, 'rest');
    const body = await run(call);
    if (call.remaining !== null) this.setHeader(CREDITS_HEADER, call.remaining);
    return body;
  }
}
