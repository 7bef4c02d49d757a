import { Example, Get, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { badRequest } from '../../src/core/errors.js';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { MeteredCall } from '../shared/query-context.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { citationUrl } from '../shared/provenance.js';
import { THEME_SLUG, getThemeDetail, type ThemeDetail } from './get-themes.query.js';

export interface ThemeDetailResponse extends ThemeDetail {
  /**
   * Your as-of date: each constituent shows its latest score on or before it (its `date`), never a
   * later one. On the free tier it trails today by 7 days.
   * @format date
   */
  as_of: string | null;
  /**
   * Canonical page to cite.
   * @format uri
   */
  citation_url: string;
}

@Route('v1/themes')
@Tags('Discovery')
@Security('api_key', ['theme_detail'])
export class GetThemeDetailController extends MeteredController {
  /**
   * One theme with each constituent's latest scores on or before your as-of date (a late, halted
   * or delisted stock shows its last score and that score's `date`; one with no score on or before
   * as_of shows null scores). 1 credit per constituent returned. Free keys see only the constituents in their `top100` universe (and pay only for those).
   * @param slug Theme identifier from GET /v1/themes (case-insensitive).
   * @example slug "semiconductors"
   * @summary One theme with its constituents
   */
  @Get('{slug}')
  @Example<ThemeDetailResponse>({
    slug: 'semiconductors',
    name: 'Semiconductors',
    strength: 83,
    stock_count: 1,
    scored_count: 1,
    avg_main_street: 64.2,
    avg_wall_street: 71.0,
    avg_service_score: 67.3,
    constituents: [
      {
        ticker: 'NVDA',
        relationship: 'core',
        date: '2019-06-13',
        main_street: 64.2,
        wall_street: 71.0,
        service_score: 67.3,
        divergence_gap: -6.8,
      },
    ],
    as_of: '2019-06-13',
    citation_url: 'https://api.example.com/docs?as_of=2019-06-13',
  })
  @Response<ProblemDetails>(400, 'Malformed slug')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  @Response<ProblemDetails>(404, 'Unknown theme (not_found)')
  public async getTheme(@Path() slug: string, @Request() req: AuthedRequest): Promise<ThemeDetailResponse> {
    return this.serve(req, (call) => run(call, slug));
  }
}

export async function run(call: MeteredCall, slug: string): Promise<ThemeDetailResponse> {
  // As written: the document's pattern admits no surrounding space, so neither does the service.
  if (!THEME_SLUG.test(slug)) throw badRequest('slug must be 1 to 64 characters of letters, digits and "-"', { errors: [{ parameter: 'slug', message: 'malformed' }] });
  const v = await call.visibility();
  const theme = await getThemeDetail(call.ctx.reads, v, slug.toLowerCase());
  await call.charge('theme_detail', theme.constituents.length);
  return { ...theme, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
