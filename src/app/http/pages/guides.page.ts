import type { Express } from 'express';
import type { Services } from '../../container.js';
import { GUIDES, type Guide } from '../generated/docs.js';
import { html, page, raw, sendHtml, SERVICE_NAME, type SafeHtml } from './html.js';

const CACHE_GUIDES = 'public, max-age=300';

/** A guide as the nav, the reference, the home page and /llms.txt link it. */
export interface GuideLink {
  title: string;
  path: string;
}

/**
 * Every guide in reading order: the Markdown ones rendered at build time (scripts/render-docs.mjs)
 * and the errors page, generated from the error codes, in its place among them.
 */
export const GUIDE_LINKS: readonly GuideLink[] = (() => {
  const links = GUIDES.map((g) => ({ title: g.title, path: `/docs/${g.slug}` }));
  const sdks = links.findIndex((l) => l.path === '/docs/sdks');
  links.splice(sdks < 0 ? links.length : sdks, 0, { title: 'Errors', path: '/docs/errors' });
  return links;
})();

/** The nav every guide page (the errors page too) carries, the current one marked. */
export function guidesNav(current: string): SafeHtml {
  return html`<nav class="guides" aria-label="Guides"><ul>
<li><a href="/docs">API reference</a></li>
${GUIDE_LINKS.map((l) => html`<li><a href="${l.path}"${l.path === current ? raw(' aria-current="page"') : ''}>${l.title}</a></li>`)}
</ul></nav>`;
}

function guidePage(guide: Guide, baseUrl: string, demo: boolean): SafeHtml {
  const path = `/docs/${guide.slug}`;
  return page({
    demo,
    title: `${guide.title} — ${SERVICE_NAME}`,
    canonical: `${baseUrl}${path}`,
    description: `${SERVICE_NAME} guide: ${guide.title}.`,
    // The guide's HTML was rendered from the repository's Markdown at build time (raw HTML in it
    // escaped there): trusted, as the rest of this folder's markup is.
    body: html`${guidesNav(path)}
<article class="guide">
<h1>${guide.title}</h1>
${raw(guide.html)}
</article>`,
  });
}

/** `/docs/<slug>` for each guide, rendered once here from the build's HTML. */
export function registerGuidePages(app: Express, services: Services): void {
  for (const guide of GUIDES) {
    app.get(`/docs/${guide.slug}`, (_req, res) =>
      sendHtml(res, 200, guidePage(guide, services.baseUrl(), services.config.demo), { cacheControl: CACHE_GUIDES }),
    );
  }
}
