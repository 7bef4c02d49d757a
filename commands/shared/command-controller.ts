import { Controller } from '@tsoa/runtime';
import { CREDITS_HEADER, type AuthedRequest, type Principal } from '../../src/web/meter.port.js';
import { HEADER } from '../../src/web/response-headers.js';
import type { CommandContext } from './command-context.js';

/**
 * Base of the write side's REST controllers: the ioc builds them with the `CommandContext` (their
 * `context` says so), and `serve` runs a call for the authenticated caller and sets its
 * `X-Credits-Remaining` (these endpoints are free, the header is there all the same).
 */
export abstract class CommandController extends Controller {
  static readonly context = 'commands' as const;

  constructor(protected readonly ctx: CommandContext) {
    super();
  }

  protected async serve<T>(req: AuthedRequest, run: (caller: Principal) => Promise<T>): Promise<T> {
    const caller = req.user;
    if (!caller) throw new Error('controller reached without authentication');
    // A dry run of a free read (a download, a webhook's deliveries): it would cost nothing, and is not run.
    if (req.budget?.dryRun) {
      this.setStatus(204);
      this.setHeader(CREDITS_HEADER, await this.ctx.meter.remaining(caller));
      this.setHeader(HEADER.creditsCost, '0');
      return undefined as T;
    }
    const body = await run(caller);
    this.setHeader(CREDITS_HEADER, await this.ctx.meter.remaining(caller));
    return body;
  }
}
