import { Example, Get, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { MeteredCall } from '../shared/query-context.js';
import { MeteredController } from '../shared/metered-controller.js';
import { badRequest } from '../../src/core/errors.js';
import { parseDateParam } from '../shared/params.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { citationUrl } from '../shared/provenance.js';
import { closedEvents, type DivergenceEvent } from './get-divergence-events.query.js';

export interface DivergenceEventsResponse {
  /** Closed divergence events, newest flag_date first, at most 2,000. */
  events: DivergenceEvent[];
  /**
   * Number of events returned.
   * @isInt
   */
  count: number;
  /**
   * The flag_date floor applied (your `since`, or 365 days before today).
   * @format date
   */
  since: string;
  /**
   * Data as-of date: events closed on or before it are listed.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

@Route('v1/divergence/events')
@Tags('Outcomes')
@Security('api_key', ['divergence_events'])
export class GetDivergenceEventsController extends MeteredController {
  /**
   * Closed divergence events with their dated outcome: the close price on the flag date and on
   * the close date, the percent change between them and the calendar days in between. An event
   * opens on the first day of an extreme (percentile ≥ 0.95) and closes when the percentile falls
   * below 0.5, after 60 trading days, or when an extreme of the opposite direction starts.
   * Quant plan or higher; 10 credits per call.
   * @param since Date YYYY-MM-DD: only events flagged on or after it (default 365 days before today).
   * @summary Closed divergence events with outcomes
   */
  @Get()
  @Example<DivergenceEventsResponse>({
    events: [
      {
        ticker: 'COST',
        direction: 'bull',
        flag_date: '2019-03-04',
        close_date: '2019-04-22',
        price_at_flag: 231.4,
        price_at_close: 244.12,
        pct_change: 5.5,
        days: 49,
      },
    ],
    count: 1,
    since: '2018-06-14',
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'since is not a date YYYY-MM-DD')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  public async getDivergenceEvents(@Request() req: AuthedRequest, @Query() since?: string): Promise<DivergenceEventsResponse> {
    return this.serve(req, (call) => run(call, since));
  }
}

export async function run(call: MeteredCall, since: string | undefined): Promise<DivergenceEventsResponse> {
  const from = parseSince(since);
  const v = await call.visibility();
  const result = await closedEvents(call.ctx.reads, v, from);
  await call.charge('divergence_events');
  return {
    events: result.events,
    count: result.events.length,
    since: result.since,
    as_of: v.asOf,
    citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }),
  };
}

/**
 * `since` as a real date. parseDateParam throws a RangeError (a 500) on an impossible date such as
 * 2019-13-01, so such values are refused here first.
 */
function parseSince(value: string | undefined): string | undefined {
  if (value !== undefined && Number.isNaN(Date.parse(`${value}T00:00:00Z`))) {
    throw badRequest('since must be a date YYYY-MM-DD', { errors: [{ parameter: 'since', message: 'must be a date YYYY-MM-DD' }] });
  }
  return parseDateParam('since', value);
}
