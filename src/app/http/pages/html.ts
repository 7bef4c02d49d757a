import type { Response } from 'express';
import { SITE_CSS_PATH } from './site.css.js';

/** Markup that is already safe to send: only `html` and `raw` make one. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/**
 * A template tag that escapes every interpolated value unless it is itself `html`, so that
 * no text from the read models (company names, a requested path) can become markup.
 */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

/** Trusted markup written in this folder (never data). */
export const raw = (markup: string): SafeHtml => new SafeHtml(markup);


export interface PageOptions {
  title: string;
  /** Absolute canonical URL of the page, when it has one. */
  canonical?: string;
  description?: string;
  /** Extra markup for <head> (trusted). */
  head?: SafeHtml;
  /** Written inside the layout's <main>. */
  body: SafeHtml;
  /** Full-width markup between <main> and the footer (the Redoc reference lays itself out). */
  wide?: SafeHtml;
  /** A demo deployment: the data is simulated, and the page says so in a banner. */
  demo?: boolean;
}

/** What a demo deployment's data is, said on every page that shows it. */
export const DEMO_NOTICE = 'Simulated data: only tickers and names are real.';

/**
 * Every table in a scrolling box of its own, so that a wide table scrolls sideways inside the
 * page instead of widening it (the box takes focus, so a keyboard can scroll it too). The markup
 * is the page's own (data is escaped), so a `<table` here is always a tag.
 */
const scrollingTables = (markup: SafeHtml): SafeHtml =>
  raw(markup.value.replace(/<table\b/g, '<div class="table-scroll" tabindex="0"><table').replace(/<\/table>/g, '</table></div>'));

export const SERVICE_NAME = 'Scores API';

/** The shared HTML document around a page's content. */
export function page(o: PageOptions): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title}</title>
<link rel="icon" href="data:,">
${o.description ? html`<meta name="description" content="${o.description}">` : ''}
${o.canonical ? html`<link rel="canonical" href="${o.canonical}">` : ''}
<link rel="stylesheet" href="${SITE_CSS_PATH}">
${o.head ?? ''}
</head>
<body>
<a class="skip" href="#content">Skip to content</a>
<header class="site"><a class="brand" href="/">${SERVICE_NAME}</a><nav aria-label="Main"><ul><li><a href="/#pricing">Pricing</a></li><li><a href="/docs">API reference</a></li><li><a href="/docs/errors">Errors</a></li><li><a href="/license">Licence</a></li><li><a href="/account">Account</a></li></ul></nav></header>
${o.demo ? html`<div class="demo-banner" role="note" aria-label="Demo data"><p><strong>Demo deployment.</strong> ${DEMO_NOTICE}</p></div>` : ''}
<main id="content">${scrollingTables(o.body)}</main>
${o.wide ?? ''}
<footer class="site">${SERVICE_NAME}: daily Main-Street (consumer demand) and Wall-Street (analyst sentiment) scores. <a href="/openapi.json">OpenAPI document</a> · <a href="/license">Licence terms</a></footer>
</body>
</html>
`;
}

/**
 * Pages without scripts get a strict policy: nothing loads but the page itself and the site's
 * stylesheet (helmet's default CSP is off for the API as a whole).
 */
export const STATIC_PAGE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function sendHtml(res: Response, status: number, doc: SafeHtml, options: { cacheControl: string; csp?: string }): void {
  res.status(status);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', options.cacheControl);
  res.setHeader('Content-Security-Policy', options.csp ?? STATIC_PAGE_CSP);
  res.send(doc.value);
}
