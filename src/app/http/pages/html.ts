import type { Response } from 'express';

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

const STYLE = raw(`
  :root { color-scheme: light; --fg: #1d232b; --muted: #5b6673; --line: #dde3ea; --accent: #0b5cad; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: #fff; }
  header.site, main, footer.site { max-width: 60rem; margin: 0 auto; padding: 0 1.25rem; }
  header.site { display: flex; gap: 1.25rem; align-items: baseline; padding-top: 1rem; padding-bottom: .75rem; border-bottom: 1px solid var(--line); }
  header.site .brand { font-weight: 700; color: var(--fg); text-decoration: none; margin-right: auto; }
  a { color: var(--accent); }
  h1 { font-size: 1.75rem; margin: 1.25rem 0 .25rem; }
  h2 { font-size: 1.25rem; margin: 1.75rem 0 .5rem; }
  .muted { color: var(--muted); }
  table { border-collapse: collapse; margin: .5rem 0 1rem; }
  th, td { padding: .35rem .75rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  .scores { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: .75rem; margin: 1rem 0; }
  .score { border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem; }
  .score .value { font-size: 1.75rem; font-weight: 700; font-variant-numeric: tabular-nums; }
  .attribution { background: #f4f7fa; border-left: 4px solid var(--accent); padding: .75rem 1rem; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9rem; overflow-wrap: anywhere; }
  .note { background: #fff8e6; border: 1px solid #f0d999; border-radius: .5rem; padding: .75rem 1rem; }
  code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; background: #f4f7fa; padding: .05rem .3rem; border-radius: .25rem; }
  dt { font-weight: 600; margin-top: .75rem; }
  dd { margin-left: 1.25rem; }
  footer.site { margin-top: 2.5rem; padding-top: 1rem; padding-bottom: 2rem; border-top: 1px solid var(--line); font-size: .875rem; color: var(--muted); }
  svg.sparkline { display: block; max-width: 100%; height: auto; }
`);

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
}

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
<style>${STYLE}</style>
${o.head ?? ''}
</head>
<body>
<header class="site"><a class="brand" href="/">${SERVICE_NAME}</a><a href="/#pricing">Pricing</a><a href="/docs">API reference</a><a href="/docs/errors">Errors</a><a href="/license">Licence</a><a href="/account">Account</a></header>
<main>${o.body}</main>
${o.wide ?? ''}
<footer class="site">${SERVICE_NAME}: daily Main-Street (consumer demand) and Wall-Street (analyst sentiment) scores. <a href="/openapi.json">OpenAPI document</a> · <a href="/license">Licence terms</a></footer>
</body>
</html>
`;
}

/**
 * Pages without scripts get a strict policy: nothing loads but the page itself and its inline
 * style (helmet's default CSP is off for the API as a whole).
 */
export const STATIC_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function sendHtml(res: Response, status: number, doc: SafeHtml, options: { cacheControl: string; csp?: string }): void {
  res.status(status);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', options.cacheControl);
  res.setHeader('Content-Security-Policy', options.csp ?? STATIC_PAGE_CSP);
  res.send(doc.value);
}
