import type { Express } from 'express';
import type { Services } from '../../container.js';
import { TIERS, type Tier } from '../../../domain/plans.js';
import { citationUrl } from '../../../../queries/shared/provenance.js';
import { html, page, sendHtml, SERVICE_NAME } from './html.js';

export interface LicenceTerms {
  /** The tier's name as the spec writes it. */
  name: string;
  permitted: string;
  not_permitted: string;
}

/** The spec's licence terms by tier, word for word: THE one copy (the /license page and its JSON). */
export const LICENCE_TERMS: Readonly<Record<Tier, Readonly<LicenceTerms>>> = Object.freeze({
  free: {
    name: 'Free',
    permitted: 'Personal projects, with attribution to the service',
    not_permitted: 'Commercial use, redistribution, removing attribution',
  },
  hobbyist: { name: 'Hobbyist', permitted: 'Personal trading, private tools', not_permitted: 'Commercial products, sharing data' },
  builder: {
    name: 'Builder',
    permitted: "Internal commercial use in the user's company",
    not_permitted: "Displaying data to the user's users, redistribution",
  },
  quant: { name: 'Quant', permitted: 'Indie apps displaying scores, with attribution', not_permitted: 'Bulk redistribution, resale' },
  enterprise: { name: 'Enterprise', permitted: 'Redistribution, embeds, firm-wide feeds, custom terms', not_permitted: 'none' },
});

export function licenseUrl(baseUrl: string): string {
  return `${baseUrl}/license`;
}

/** The attribution line the Free and Quant terms ask for, as the citation page shows it. */
export function attributionLine(baseUrl: string, asOf: string, ticker?: string): string {
  return `Data: ${SERVICE_NAME} Main-Street/Wall-Street scores, as of ${asOf} — ${citationUrl(baseUrl, { asOf, ticker })}`;
}

function licenceJson(baseUrl: string) {
  return {
    license: licenseUrl(baseUrl),
    tiers: TIERS.map((tier) => ({ tier, ...LICENCE_TERMS[tier] })),
    attribution: `Data: ${SERVICE_NAME} Main-Street/Wall-Street scores, as of YYYY-MM-DD — ${baseUrl}/stocks/{TICKER}?as_of=YYYY-MM-DD`,
  };
}

function licencePage(baseUrl: string) {
  const rows = TIERS.map((tier) => {
    const t = LICENCE_TERMS[tier];
    return html`<tr id="${tier}"><th scope="row">${t.name}</th><td>${t.permitted}</td><td>${t.not_permitted}</td></tr>`;
  });
  const body = html`<h1>Licence terms by tier</h1>
<p>What you may do with the data depends on your key's plan tier. The terms of the tier your key has when you receive the data apply.</p>
<table class="licence">
<thead><tr><th scope="col">Tier</th><th scope="col">Permitted</th><th scope="col">Not permitted</th></tr></thead>
<tbody>${rows}</tbody>
</table>
<h2 id="attribution">Attribution</h2>
<p>Where the terms ask for attribution (Free and Quant), show this line next to the data, with the date the data is as of (the <code>as_of</code> field) and the page named by the response's <code>citation_url</code>:</p>
<p class="attribution">Data: ${SERVICE_NAME} Main-Street/Wall-Street scores, as of YYYY-MM-DD — ${baseUrl}/stocks/{TICKER}?as_of=YYYY-MM-DD</p>
<p>Each stock's public page, for example <a href="/stocks/AAPL">${baseUrl}/stocks/AAPL</a>, shows the line ready to copy.</p>
<p class="muted">This page is also available as JSON: send <code>Accept: application/json</code>.</p>`;
  return page({ title: `Licence terms — ${SERVICE_NAME}`, canonical: licenseUrl(baseUrl), description: `${SERVICE_NAME} licence terms by plan tier.`, body });
}

/** `GET /license`: HTML for people, JSON for programs (content negotiation on Accept). */
export function registerLicencePage(app: Express, services: Services): void {
  app.get('/license', (_req, res) => {
    const baseUrl = services.baseUrl();
    res.format({
      'text/html': () => sendHtml(res, 200, licencePage(baseUrl), { cacheControl: 'public, max-age=3600' }),
      'application/json': () => {
        res.setHeader('Cache-Control', 'public, max-age=3600');
        res.json(licenceJson(baseUrl));
      },
      // An Accept that names neither still gets the page rather than a 406.
      default: () => sendHtml(res, 200, licencePage(baseUrl), { cacheControl: 'public, max-age=3600' }),
    });
  });
}
