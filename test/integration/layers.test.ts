import { expect } from 'chai';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';
import { tempDir } from '../support/server.js';

/**
 * The layer rules of `npm run lint` (.dependency-cruiser.cjs), run on a miniature tree with the
 * project's folder names: one module per layer, then one import at a time that crosses a layer
 * the wrong way, each of which must be refused by the rule that names it.
 */
const { forbidden } = createRequire(import.meta.url)(join(projectRoot(), '.dependency-cruiser.cjs')) as { forbidden: unknown[] };

const LAYERS: Record<string, string> = {
  kernel: 'src/core/clock.port.js',
  domain: 'src/domain/plans.js',
  events: 'src/domain/scores/score.events.js',
  web: 'src/web/problem.js',
  infra: 'infra/sqlite/event-store.js',
  projection: 'projections/latest/latest.projection.js',
  otherProjection: 'projections/divergence/divergence.projection.js',
  projectionShared: 'projections/shared/daily-scores.js',
  command: 'commands/ledger/ledger.handler.js',
  otherCommand: 'commands/billing/billing.handler.js',
  commandShared: 'commands/shared/command-context.js',
  query: 'queries/get-score/get-score.query.js',
  controller: 'queries/get-score/get-score.controller.js',
  commandController: 'commands/manage-webhooks/webhooks.controller.js',
  otherQuery: 'queries/get-themes/get-themes.query.js',
  queryShared: 'queries/shared/params.js',
  http: 'src/app/http/app.js',
  mcp: 'src/app/mcp/server.js',
  tool: 'src/app/mcp/tools/get-scores.tool.js',
  app: 'src/app/container.js',
  cli: 'src/app/cli/main.js',
  cliHelp: 'src/app/cli/help.js',
  httpServer: 'src/app/http/express-server.js',
};

async function violations(imports: [from: string, to: string][]): Promise<string[]> {
  const dir = tempDir('scores-layers-');
  try {
    const body = new Map<string, string>(Object.values(LAYERS).map((f) => [f, 'export const x = 1;\n']));
    for (const [from, to] of imports) {
      const up = '../'.repeat(from.split('/').length - 1);
      body.set(from, `${body.get(from) ?? ''}import '${up}${to}';\n`);
    }
    for (const [file, text] of body) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    const out = await cruise(['src', 'commands', 'queries', 'projections', 'infra'].filter((d) => [...body.keys()].some((f) => f.startsWith(`${d}/`))), { baseDir: dir, validate: true, ruleSet: { forbidden } as never });
    const result = out.output as ICruiseResult;
    return result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('The layer rules of npm run lint', () => {
  it('accept imports of the kernel from every layer, and of lower layers from higher ones', async () => {
    const allowed: [string, string][] = [
      [LAYERS['domain']!, LAYERS['kernel']!],
      [LAYERS['events']!, LAYERS['domain']!],
      [LAYERS['infra']!, LAYERS['kernel']!],
      [LAYERS['projection']!, LAYERS['events']!],
      [LAYERS['command']!, LAYERS['events']!],
      [LAYERS['command']!, LAYERS['projection']!],
      [LAYERS['query']!, LAYERS['projection']!],
      [LAYERS['query']!, LAYERS['domain']!],
      [LAYERS['app']!, LAYERS['command']!],
      [LAYERS['app']!, LAYERS['query']!],
      [LAYERS['app']!, LAYERS['infra']!],
      [LAYERS['web']!, LAYERS['domain']!],
      [LAYERS['command']!, LAYERS['web']!],
      [LAYERS['query']!, LAYERS['web']!],
      [LAYERS['command']!, LAYERS['commandShared']!],
      [LAYERS['otherQuery']!, LAYERS['queryShared']!],
      [LAYERS['mcp']!, LAYERS['http']!],
      [LAYERS['tool']!, LAYERS['query']!],
      [LAYERS['otherProjection']!, LAYERS['projectionShared']!],
      [LAYERS['projection']!, LAYERS['projectionShared']!],
      [LAYERS['controller']!, LAYERS['query']!],
    ];
    expect(await violations(allowed)).to.deep.equal([]);
  });

  const refused: [what: string, from: string, to: string, rule: string][] = [
    ['a projection importing a command', 'projection', 'command', 'projections-import-only-kernel'],
    ['a projection importing infra', 'projection', 'infra', 'projections-import-only-kernel'],
    ['a query importing the application layer', 'query', 'app', 'queries-not-commands-or-app'],
    ['a query importing a command', 'query', 'command', 'queries-not-commands-or-app'],
    ['infra importing a projection', 'infra', 'projection', 'infra-imports-only-kernel'],
    ['infra importing a command', 'infra', 'command', 'infra-imports-only-kernel'],
    ['infra importing a query', 'infra', 'query', 'infra-imports-only-kernel'],
    ['infra importing the application layer', 'infra', 'app', 'infra-imports-only-kernel'],
    ['a command importing a query', 'command', 'query', 'commands-not-queries-or-app'],
    ['a command importing the application layer', 'command', 'app', 'commands-not-queries-or-app'],
    ['the kernel importing a projection', 'kernel', 'projection', 'kernel-imports-only-kernel'],
    ['a domain rule importing a command', 'domain', 'command', 'kernel-imports-only-kernel'],
    ['an event contract importing the application layer', 'events', 'app', 'kernel-imports-only-kernel'],
    ['the kernel importing the HTTP vocabulary', 'kernel', 'web', 'kernel-imports-only-kernel'],
    ['a port importing a domain rule', 'kernel', 'domain', 'core-below-domain'],
    ['the HTTP vocabulary importing a query', 'web', 'query', 'web-imports-only-kernel'],
    ['a projection importing the HTTP vocabulary', 'projection', 'web', 'projections-import-only-kernel'],
    ['infra importing the HTTP vocabulary', 'infra', 'web', 'infra-imports-only-kernel'],
    ['a command slice importing another command slice', 'otherCommand', 'command', 'slices-do-not-import-slices'],
    ['a query slice importing another query slice', 'otherQuery', 'query', 'slices-do-not-import-slices'],
    ['a projection importing another projection', 'otherProjection', 'projection', 'slices-do-not-import-slices'],
    ['the HTTP app importing the MCP server', 'http', 'mcp', 'http-below-mcp'],
    ['an MCP tool importing a query controller', 'tool', 'controller', 'mcp-tools-not-controllers'],
    ['an MCP tool importing a command controller', 'tool', 'commandController', 'mcp-tools-not-controllers'],
  ];
  it('refuse two folders importing each other through different files, with no module cycle (no-folder-cycle)', async () => {
    const found = await violations([
      [LAYERS['cli']!, LAYERS['http']!],
      [LAYERS['httpServer']!, LAYERS['cliHelp']!],
    ]);
    expect(found.filter((v) => v.startsWith('no-circular'))).to.deep.equal([]);
    expect(found.filter((v) => v.startsWith('no-folder-cycle')).sort()).to.deep.equal([
      'no-folder-cycle: src/app/cli -> src/app/http',
      'no-folder-cycle: src/app/http -> src/app/cli',
    ]);
  });

  for (const [what, from, to, rule] of refused) {
    it(`refuse ${what} (${rule})`, async () => {
      const found = await violations([[LAYERS[from]!, LAYERS[to]!]]);
      expect(found).to.deep.equal([`${rule}: ${LAYERS[from]} -> ${LAYERS[to]}`]);
    });
  }
});
