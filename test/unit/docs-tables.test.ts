import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PLANS, PRO_MONTHLY_PRICE_USD, PRO_OVERLAY, TIERS } from '../../src/domain/plans.js';
import { RATE_CARD, RATE_KEYS, type RateCardEntry } from '../../src/domain/rate-card.js';

// The tier table and the rate card are defined once, in code. docs/product.md shows them between
// `<!-- generated:NAME -->` markers; this test renders both from the code and fails, printing the
// markdown to paste, when the document says anything else.

const PRODUCT_MD = fileURLToPath(new URL('../../docs/product.md', import.meta.url));

const count = (n: number | null, none: string): string => (n === null ? none : n.toLocaleString('en-US'));
const usd = (n: number | null): string => (n === null ? '—' : `$${n.toFixed(2)}`);

function renderTiers(): string {
  const rows = TIERS.map((t) => {
    const p = PLANS[t];
    return `| ${t} | ${p.monthly_price_usd === null ? 'by contract' : usd(p.monthly_price_usd)} | ${count(p.monthly_allowance, 'unmetered')} | ${p.delay_days} | ${p.coverage} | ${count(p.history_days, 'full')} | ${usd(p.overage_per_1k_usd)} |`;
  });
  const o = PRO_OVERLAY;
  return [
    '| tier | price / month | credits / month | delay (days) | coverage | history (days) | overage per 1,000 credits |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    `| Pro overlay (on any tier) | ${usd(PRO_MONTHLY_PRICE_USD)} | ${count(o.credits, 'unmetered')} | ${o.delay_days} | ${o.coverage} | ${count(o.history_days, 'full')} | — |`,
  ].join('\n');
}

function cost(e: RateCardEntry): string {
  if (e.credits === 0) return 'free';
  return e.unit === 'call' ? `${e.credits}` : `${e.credits} per ${e.unit}`;
}

function renderRateCard(): string {
  const rows = RATE_KEYS.map((k) => {
    const e = RATE_CARD[k];
    const tier = e.min_tier === 'free' ? 'any' : `${e.min_tier}+`;
    const routes = e.routes.map((r) => `\`${r.method} ${r.path}\``).join('<br>');
    return `| ${routes} | \`${k}\` | ${cost(e)} | ${tier} | ${e.mcp_tool ? `\`${e.mcp_tool}\`` : '—'} |`;
  });
  return ['| endpoint | rate key | credits | minimum tier | MCP tool |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** The text between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`, trimmed. */
function block(doc: string, name: string): string | null {
  const open = `<!-- generated:${name} -->`;
  const close = `<!-- /generated:${name} -->`;
  const start = doc.indexOf(open);
  const end = doc.indexOf(close);
  if (start < 0 || end < start) return null;
  return doc.slice(start + open.length, end).trim();
}

describe('docs/product.md', () => {
  const doc = readFileSync(PRODUCT_MD, 'utf8');

  const tables: [name: string, render: () => string, source: string][] = [
    ['tiers', renderTiers, 'src/domain/plans.ts'],
    ['rate-card', renderRateCard, 'src/domain/rate-card.ts'],
  ];
  for (const [name, render, source] of tables) {
    it(`shows the ${name} table exactly as ${source} defines it`, () => {
      const expected = render();
      const actual = block(doc, name);
      const fix = `docs/product.md must hold, between <!-- generated:${name} --> and <!-- /generated:${name} -->:\n\n${expected}\n`;
      expect(actual, fix).to.equal(expected);
    });
  }
});
