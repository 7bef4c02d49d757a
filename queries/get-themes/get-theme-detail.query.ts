import { badRequest } from '../../src/core/errors.js';
import type { MeteredCall } from '../shared/query-context.js';
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

export async function run(call: MeteredCall, slug: string): Promise<ThemeDetailResponse> {
  // As written: the document's pattern admits no surrounding space, so neither does the service.
  if (!THEME_SLUG.test(slug)) throw badRequest('slug must be 1 to 64 characters of letters, digits and "-"', { errors: [{ parameter: 'slug', message: 'malformed' }] });
  const v = await call.visibility();
  const theme = await getThemeDetail(call.ctx.reads, v, slug.toLowerCase());
  await call.charge('theme_detail', theme.constituents.length);
  return { ...theme, as_of: v.asOf, citation_url: citationUrl(call.ctx.baseUrl(), { asOf: v.asOf }) };
}
