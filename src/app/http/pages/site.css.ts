import { createHash } from 'node:crypto';

/**
 * The one stylesheet of every HTML page (home, stocks, docs, licence, account), served as a file
 * at `SITE_CSS_PATH` so the pages' policies need no inline style. No framework: a type scale,
 * a spacing scale, buttons and inputs, tables that scroll inside their own box, notices, and a
 * header that wraps. Works at 320 px and up; nothing here needs JavaScript.
 */
export const SITE_CSS = `
:root {
  color-scheme: light;
  --fg: #1d232b; --muted: #515c69; --line: #d5dce4; --bg-soft: #f4f7fa; --accent: #0b5cad; --accent-dark: #084785;
  --ok-bg: #edf7ee; --ok-line: #8cc795; --warn-bg: #fff8e6; --warn-line: #e6c66b; --err-bg: #fdeeee; --err-line: #e49b9b;
  --s1: .25rem; --s2: .5rem; --s3: .75rem; --s4: 1rem; --s5: 1.5rem; --s6: 2rem; --s7: 3rem;
  --t-sm: .875rem; --t-base: 1rem; --t-lg: 1.25rem; --t-xl: 1.5rem; --t-2xl: 2rem;
  --radius: .375rem;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: var(--t-base)/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: #fff; overflow-wrap: break-word; }
img, svg, canvas { max-width: 100%; }
a { color: var(--accent); text-underline-offset: .15em; }
a:hover { color: var(--accent-dark); }
:focus-visible { outline: 3px solid #f0b400; outline-offset: 2px; }

/* Layout */
.skip { position: absolute; left: -999px; top: 0; }
.skip:focus { left: var(--s4); z-index: 10; background: #fff; padding: var(--s2) var(--s3); }
header.site, main, footer.site, .demo-banner > p { max-width: 62rem; margin: 0 auto; padding-left: var(--s4); padding-right: var(--s4); }
header.site { display: flex; flex-wrap: wrap; gap: var(--s2) var(--s4); align-items: baseline; padding-top: var(--s4); padding-bottom: var(--s3); border-bottom: 1px solid var(--line); }
header.site .brand { font-weight: 700; font-size: var(--t-lg); color: var(--fg); text-decoration: none; margin-right: auto; }
header.site nav ul { display: flex; flex-wrap: wrap; gap: var(--s1) var(--s4); list-style: none; margin: 0; padding: 0; }
header.site nav a { text-decoration: none; padding: var(--s1) 0; display: inline-block; }
header.site nav a:hover { text-decoration: underline; }
main { padding-bottom: var(--s5); }
footer.site { margin-top: var(--s6); padding-top: var(--s4); padding-bottom: var(--s6); border-top: 1px solid var(--line); font-size: var(--t-sm); color: var(--muted); }
.demo-banner { background: #fff4d6; border-bottom: 1px solid var(--warn-line); }
.demo-banner > p { margin: 0; padding-top: var(--s2); padding-bottom: var(--s2); font-size: var(--t-sm); }

/* Type scale */
h1, h2, h3 { line-height: 1.25; }
h1 { font-size: var(--t-2xl); margin: var(--s5) 0 var(--s2); }
h2 { font-size: var(--t-xl); margin: var(--s6) 0 var(--s3); }
h3 { font-size: var(--t-lg); margin: var(--s5) 0 var(--s2); }
p, ul, ol, dl { margin: 0 0 var(--s4); }
small, .small { font-size: var(--t-sm); }
.muted { color: var(--muted); }
/* Not inside Redoc (/docs): its samples are light text on its own dark panel. */
code:where(:not(#redoc *)) { font-family: var(--mono); font-size: .9em; background: var(--bg-soft); padding: .05rem .3rem; border-radius: .25rem; overflow-wrap: anywhere; }
/* Code wraps rather than scrolls: a sample is read whole, on a phone too. */
pre:where(:not(#redoc *)) { background: var(--bg-soft); border: 1px solid var(--line); border-radius: var(--radius); padding: var(--s3) var(--s4); max-width: 100%; white-space: pre-wrap; overflow-wrap: anywhere; }
pre code { background: none; padding: 0; }
dt { font-weight: 600; margin-top: var(--s3); }
dd { margin-left: var(--s4); }

/* Tables: each scrolls sideways in its own box, never the page. */
.table-scroll { max-width: 100%; overflow-x: auto; margin: var(--s2) 0 var(--s4); }
table { border-collapse: collapse; min-width: 100%; }
.table-scroll > table { margin: 0; }
th, td { padding: var(--s2) var(--s3); border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { font-size: var(--t-sm); color: var(--muted); border-bottom-width: 2px; white-space: nowrap; }
td code, th code { white-space: nowrap; overflow-wrap: normal; }
table.history td:first-child, table.versions td:first-child { white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }

/* Forms */
label { display: block; font-weight: 600; margin-bottom: var(--s1); }
label + br { display: none; }
input[type=text], input[type=email], input[type=url], input[type=number], input[type=password], input[type=date], select, textarea {
  font: inherit; color: inherit; width: 100%; max-width: 28rem; padding: var(--s2) var(--s3); border: 1px solid #8a96a3; border-radius: var(--radius); background: #fff;
}
input:focus, select:focus, textarea:focus { border-color: var(--accent); }
button, .button, input[type=submit] {
  font: inherit; font-weight: 600; display: inline-block; padding: var(--s2) var(--s4); border-radius: var(--radius); border: 1px solid var(--accent);
  background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; line-height: 1.4;
}
button:hover, .button:hover, input[type=submit]:hover { background: var(--accent-dark); border-color: var(--accent-dark); color: #fff; }
button.secondary, .button.secondary { background: #fff; color: var(--accent); }
button.secondary:hover, .button.secondary:hover { background: var(--bg-soft); color: var(--accent-dark); }
button.danger, .button.danger { background: #b42318; border-color: #b42318; }
form.inline { display: inline-block; margin: 0 var(--s1); }
fieldset { border: 1px solid var(--line); border-radius: var(--radius); padding: var(--s3) var(--s4); margin: 0 0 var(--s4); }
input[type=datetime-local] { font: inherit; color: inherit; padding: var(--s2) var(--s3); border: 1px solid #8a96a3; border-radius: var(--radius); background: #fff; max-width: 100%; }
label.op { display: inline-block; font-weight: 400; margin: 0 var(--s3) var(--s1) 0; }

/* Notices */
.note, .notice { background: var(--warn-bg); border: 1px solid var(--warn-line); border-radius: var(--radius); padding: var(--s3) var(--s4); }
.notice.ok { background: var(--ok-bg); border-color: var(--ok-line); }
.notice.error { background: var(--err-bg); border-color: var(--err-line); }
.attribution { background: var(--bg-soft); border-left: 4px solid var(--accent); padding: var(--s3) var(--s4); font-family: var(--mono); font-size: .9rem; overflow-wrap: anywhere; }

/* Score cards and charts */
.scores { display: grid; grid-template-columns: repeat(auto-fit, minmax(9rem, 1fr)); gap: var(--s3); margin: var(--s4) 0; }
.score { border: 1px solid var(--line); border-radius: var(--radius); padding: var(--s3) var(--s4); }
.score .value { font-size: var(--t-2xl); font-weight: 700; font-variant-numeric: tabular-nums; }
svg.sparkline { display: block; max-width: 100%; height: auto; }
.chart { max-width: 100%; overflow: hidden; margin: var(--s3) 0; min-height: 1px; }
.chart .uplot { font-family: inherit; }
.chart .u-legend { font-size: var(--t-sm); }

/* Text for screen readers only (a column heading with nothing to show). */
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }

@media (max-width: 40rem) {
  h1 { font-size: var(--t-xl); }
  h2 { font-size: var(--t-lg); }
  header.site { gap: var(--s1) var(--s3); }
  header.site .brand { width: 100%; }
  th, td { padding: var(--s1) var(--s2); }
  /* The keys table as one card per key: its Rotate and Revoke buttons in view, not past a sideways scroll. */
  table.keys, table.keys tbody, table.keys tr, table.keys td { display: block; min-width: 0; }
  table.keys thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  table.keys tr { border-bottom: 1px solid var(--line); padding: var(--s2) 0; }
  table.keys td { border: 0; padding: 2px 0; }
  table.keys td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
  table.keys td.key-actions form.inline { margin: var(--s1) var(--s2) 0 0; }
}

/* Account page: usage chart, ledger, upcoming invoice, readable times (issue 33, item 3) */
figure.usage { margin: var(--s3) 0 var(--s4); }
figure.usage figcaption { font-size: var(--t-sm); }
time[title] { text-decoration: underline dotted; text-underline-offset: .2em; }
table.ledger td:nth-child(2) { min-width: 8.5rem; }
table.ledger td:nth-child(3) { min-width: 14rem; }
#upcoming-lines tfoot th { font-size: var(--t-base); color: var(--fg); white-space: normal; font-weight: 600; }

/* Account actions (confirmation steps and notices): no gap under a notice's last line; Confirm and Cancel side by side, wrapping on a phone */
.note > p:last-child, .notice > p:last-child { margin-bottom: 0; }
#notice { margin: var(--s3) 0; }
form.confirm { display: flex; flex-wrap: wrap; gap: var(--s2); align-items: center; margin-top: var(--s4); }

/* Request log (account): the filters side by side, wrapping on a phone; the call's id leads each row */
form.filters { display: flex; flex-wrap: wrap; gap: var(--s2) var(--s4); align-items: flex-end; margin: var(--s3) 0 var(--s4); }
form.filters > div { flex: 1 1 11rem; min-width: 0; }
form.filters > div.filter-actions { flex-basis: 100%; }
table.requests td:nth-child(3) { min-width: 8.5rem; }
@media (max-width: 40rem) {
  /* One card per call on a phone: its link and its outcome in view, not past a sideways scroll. */
  table.requests, table.requests tbody, table.requests tr, table.requests td { display: block; min-width: 0; text-align: left; }
  table.requests thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  table.requests tr { border-bottom: 1px solid var(--line); padding: var(--s2) 0; }
  table.requests td { border: 0; padding: 2px 0; }
  table.requests td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
}

/* Guides (/docs/<slug>): the guides' nav wraps on a phone; a code block keeps its lines and scrolls inside itself */
nav.guides ul, ul.guides { display: flex; flex-wrap: wrap; gap: var(--s1) var(--s4); list-style: none; margin: var(--s3) 0; padding: 0; font-size: var(--t-sm); }
nav.guides a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
.guide pre.code { white-space: pre; overflow-x: auto; overflow-wrap: normal; }
.guide pre.code code { overflow-wrap: normal; }
.guide td code { white-space: normal; }
.guide h2, .guide h3 { scroll-margin-top: var(--s4); }

/* Account webhooks: the actions' forms one under the other; a table of class cards is one card per row on a phone, its buttons in view */
ul.hook-forms { list-style: none; padding: 0; }
ul.hook-forms > li { margin: 0 0 var(--s3); }
ul.hook-forms input, ul.hook-forms select { margin-bottom: var(--s2); }
input[type=datetime-local] { font: inherit; color: inherit; max-width: 100%; padding: var(--s2) var(--s3); border: 1px solid #8a96a3; border-radius: var(--radius); background: #fff; }
ol.attempts { margin: 0; padding-left: var(--s5); }
td.hook-url code { white-space: normal; overflow-wrap: anywhere; }
@media (max-width: 40rem) {
  table.cards, table.cards tbody, table.cards tr, table.cards td { display: block; min-width: 0; }
  table.cards thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
  table.cards tr { border-bottom: 1px solid var(--line); padding: var(--s2) 0; }
  table.cards td { border: 0; padding: 2px 0; }
  table.cards td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); }
  table.cards td code { white-space: normal; overflow-wrap: anywhere; }
  table.cards td.hook-actions form.inline { margin: var(--s1) var(--s2) 0 0; }
}
`;

/** The stylesheet's URL, versioned by its content so it can be cached for a long time. */
export const SITE_CSS_PATH = `/assets/site.css?v=${createHash('sha256').update(SITE_CSS).digest('hex').slice(0, 12)}`;
