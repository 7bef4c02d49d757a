import type { Express } from 'express';
import type { Services } from '../../container.js';
import { CREDIT_PACKS, PLANS, PRO_MONTHLY_PRICE_USD, PRO_OVERLAY, TIERS, type TierPlan } from '../../../domain/plans.js';
import { RATE_CARD, RATE_KEYS, describeCost, endpointOf, type RateKey } from '../../../domain/rate-card.js';
import { SERVICE_VERSION } from '../../version.js';
import { GUIDE_LINKS } from './guides.page.js';
import { SERVICE_NAME } from './html.js';

const usd = (n: number) => `$${n.toLocaleString('en-US')}`;
const count = (n: number) => n.toLocaleString('en-US');

function planLine(p: Readonly<TierPlan>): string {
  const price = p.monthly_price_usd === null ? 'by contract' : `${usd(p.monthly_price_usd)}/month`;
  const credits = p.monthly_allowance === null ? 'unmetered' : `${count(p.monthly_allowance)} credits/month`;
  const overage = p.overage_per_1k_usd === null ? 'no overage' : `overage ${usd(p.overage_per_1k_usd)} per 1,000 credits`;
  const delay = p.delay_days === 0 ? 'live data' : `data ${p.delay_days} days behind`;
  const history = p.history_days === null ? 'full history' : `${count(p.history_days)} days of history`;
  return `- ${p.tier}: ${price}, ${credits}, ${overage}; ${delay}, ${p.coverage === 'all' ? 'every stock' : 'the top 100 stocks'}, ${history}, ${p.rate_per_second} requests/s`;
}

/**
 * The REST endpoint a tool mirrors: its rate-card key's first GET route, as the tool's own
 * description says (src/app/mcp/rest-twin.ts, `describeTool`: tools only read, and `webhooks` lists
 * its POST first). test/e2e/llms-txt.test.ts holds every line to the tools' definitions.
 */
function mirroredRoute(key: RateKey): { method: string; path: string } | undefined {
  return RATE_CARD[key].routes.find((r) => r.method === 'GET');
}

/**
 * `/llms.txt` (https://llmstxt.org): a plain-text map of the API for agents. The prices, plans and
 * tools are read from the rate card and the plan table, the version from package.json: nothing
 * here is typed twice.
 */
export function llmsTxt(baseUrl: string): string {
  const endpoints = RATE_KEYS.map((k) => {
    const e = RATE_CARD[k];
    const tool = e.mcp_tool ? `; MCP tool \`${e.mcp_tool}\`` : '';
    return `- ${endpointOf(k)}: ${describeCost(k)}, ${e.min_tier} plan or higher${tool}`;
  });
  const tools = RATE_KEYS.flatMap((k) => {
    const tool = RATE_CARD[k].mcp_tool;
    const twin = mirroredRoute(k);
    return tool && twin ? [`- \`${tool}\`: mirrors ${twin.method} ${twin.path}, ${describeCost(k)}`] : [];
  });
  return [
    `# ${SERVICE_NAME}`,
    '',
    `> Daily Main-Street (measured consumer demand) and Wall-Street (analyst sentiment) scores, 0-100, for 500+ US stocks, with a composite service_score, the divergence gap between the two, divergence events and their outcomes, point-in-time history for backtests, and a REST API and an MCP server over the same data. Version ${SERVICE_VERSION}.`,
    '',
    '## Authenticate',
    '',
    `Send your API key in the \`X-API-Key\` header, on REST (${baseUrl}/v1/...) and on the MCP server alike. Keys are issued on the account page (${baseUrl}/account). Each call costs credits from the account's monthly allowance; every answer to a valid key carries the balance in \`X-Credits-Remaining\` (a number, or \`unlimited\`). Errors are application/problem+json with a stable \`code\`; 429 \`rate_limited\` carries \`Retry-After\`, 429 \`credits_exhausted\` means the allowance is spent.`,
    '',
    '## Bound what you spend',
    '',
    `An agent can know and cap a call's price before it pays it. Send \`X-Dry-Run: true\` (MCP: the argument \`dry_run: true\`, on every tool) to get what the call would cost now in \`X-Credits-Cost\` (a 204, or the refusal the call would get), charged nothing. Send \`X-Max-Credits: N\` (MCP: \`max_credits: N\`) and a call that would cost more is refused with 403 \`cost_exceeds_max\` and charged nothing; a call priced per row (the history endpoints) stops reading at the cap, so a broad query with a small cap costs nothing and reads almost nothing. A key can also carry its own daily and monthly credit limits (set on the account page): \`X-Key-Budget-Remaining\` (MCP: \`_meta.key_budget_remaining\`) says what it may still spend, and 429 \`key_budget_exhausted\` says when it resets. Give an agent a key with a limit, and it cannot overspend.`,
    '',
    '## Docs',
    '',
    `- [API reference](${baseUrl}/docs): every operation, parameter, response and header`,
    `- [OpenAPI document](${baseUrl}/openapi.json): the contract, with each operation's price as \`x-credits\` and minimum plan as \`x-min-tier\``,
    `- [Error codes](${baseUrl}/docs/errors): what each problem \`code\` means and what to do`,
    `- [Licence terms](${baseUrl}/license): what each plan may do with the data`,
    '',
    '## Guides',
    '',
    ...GUIDE_LINKS.map((l) => `- [${l.title}](${baseUrl}${l.path})`),
    '',
    '## SDKs',
    '',
    `Python (\`scores-client\`: httpx and pydantic, pandas frames) and TypeScript (\`@scores/client\`), with retries, typed errors, incremental sync and webhook verification. Not on PyPI or npm yet: from a checkout of the repository, \`pip install "./clients/python[pandas]"\`; for TypeScript, \`cd clients/typescript && npm install && npm pack\`, then \`npm install /path/to/scores-client-1.0.0.tgz\` in your project. See [SDKs](${baseUrl}/docs/sdks).`,
    '',
    '## REST endpoints and prices',
    '',
    ...endpoints,
    '',
    `## MCP server`,
    '',
    `Streamable HTTP at ${baseUrl}/mcp/http, with the same \`X-API-Key\`. Each tool mirrors a REST endpoint and costs the same credits; each result carries the balance as \`_meta.credits_remaining\`.`,
    '',
    ...tools,
    '',
    '## Plans',
    '',
    ...TIERS.map((t) => planLine(PLANS[t])),
    `- Pro membership (an add-on for people): ${usd(PRO_MONTHLY_PRICE_USD)}/month, ${count(PRO_OVERLAY.credits ?? 0)} credits/month, live data, ${count(PRO_OVERLAY.history_days ?? 0)} days of history`,
    `- Credit packs: ${CREDIT_PACKS.map((p) => `${count(p.credits)} credits for ${usd(p.price_usd)}`).join(', ')}`,
    '',
  ].join('\n');
}

/** `GET /llms.txt`: text/plain, key-less, the same for everyone. */
export function registerLlmsTxt(app: Express, services: Services): void {
  app.get('/llms.txt', (_req, res) => {
    res.type('text/plain; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.send(llmsTxt(services.baseUrl()));
  });
}
