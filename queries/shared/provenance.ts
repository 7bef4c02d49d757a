/** The data-source statement on score and screener responses. */
export const SOURCE_STATEMENT =
  'Main Street: measured US consumer demand (web visits, app and search activity); Wall Street: analyst ratings, target revisions and estimate changes. Composite and gap computed by the service.';

/**
 * The page to cite for a response as of `asOf` (served by the service itself): the stock's public
 * page for one ticker, else the API reference. A dated response's page names its date
 * (`/stocks/AAPL?as_of=2026-11-23`): the stock page then shows that day's numbers once the free
 * delay makes them public and until then says they are subscriber data, so one citation never
 * shows other numbers than the response's (docs/methodology.md#citations). Undated (no `as_of`)
 * only when the response has no as-of date (nothing published yet).
 */
export function citationUrl(baseUrl: string, cited: { asOf: string | null; ticker?: string }): string {
  const page = cited.ticker ? `${baseUrl}/stocks/${encodeURIComponent(cited.ticker)}` : `${baseUrl}/docs`;
  return cited.asOf === null ? page : `${page}?as_of=${cited.asOf}`;
}
