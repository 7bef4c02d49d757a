import { Controller } from '@tsoa/runtime';
import type { Services } from '../../src/app/container.js';
import type { RateKey } from '../../src/domain/rate-card.js';
import type { AuthedRequest, Principal } from '../../src/app/http/authentication.js';
import { CREDITS_HEADER, charge } from '../../src/app/http/metering.js';
import type { Visibility } from './visibility.js';

/** Base of every `/v1` controller: the services of its app and the metering of its calls. */
export abstract class MeteredController extends Controller {
  constructor(protected readonly services: Services) {
    super();
  }

  protected principal(req: AuthedRequest): Principal {
    if (!req.user) throw new Error('controller reached without authentication');
    return req.user;
  }

  /** What this caller may see now: as-of date (delay), history floor, coverage. */
  protected visibility(req: AuthedRequest): Promise<Visibility> {
    return this.services.visibility(this.principal(req).entitlements);
  }

  /** Debits the call (durably) and sets `X-Credits-Remaining`; 429 when the credits do not cover it. */
  protected async charge(req: AuthedRequest, endpoint: RateKey, quantity = 1): Promise<void> {
    const c = await charge(this.services, this.principal(req), endpoint, quantity, req.channel ?? 'rest');
    this.setHeader(CREDITS_HEADER, c.remaining);
  }
}
