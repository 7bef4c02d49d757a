/** The data-source statement on score and screener responses. */
export const SOURCE_STATEMENT =
  'Main Street: measured US consumer demand (web visits, app and search activity); Wall Street: analyst ratings, target revisions and estimate changes. Composite and gap computed by the service.';

/** Canonical page to cite for a ticker (served by the service itself). */
export function citationUrl(baseUrl: string, ticker?: string): string {
  return ticker ? `${baseUrl}/stocks/${encodeURIComponent(ticker)}` : `${baseUrl}/docs`;
}
