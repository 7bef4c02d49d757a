import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WORKER_NAMES } from '../../src/app/background-workers.js';
import { projectRoot } from '../../src/core/paths.js';

/**
 * The guides name what is in the tree: a feature folder or a background worker added without a
 * line in the README's feature table and in docs/architecture.md's diagram fails here, and so
 * does a reactor nobody starts, a decider of another shape, a path the guides name that is not in
 * the tree, and a file role (the `.role` of `name.role.ts`) the guides do not explain.
 */
const root = projectRoot();
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const folders = (top: string) =>
  readdirSync(join(root, top), { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'shared')
    .map((d) => `${top}/${d.name}`);
const featureFolders = [...folders('commands'), ...folders('queries'), ...folders('projections')];

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(suffix))
    .map((f) => `${dir}/${f}`);
}

function section(text: string, heading: string): string {
  const start = text.indexOf(heading);
  expect(start, `heading ${heading}`).to.be.greaterThan(-1);
  const next = text.indexOf('\n## ', start + heading.length);
  return text.slice(start, next < 0 ? undefined : next);
}

function paragraph(text: string, opening: string): string {
  const start = text.indexOf(opening);
  expect(start, `paragraph ${opening}`).to.be.greaterThan(-1);
  const end = text.indexOf('\n\n', start);
  return text.slice(start, end < 0 ? undefined : end);
}

const readmeTable = section(read('README.md'), '## Where to find a feature');
const architecture = read('docs/architecture.md');
const diagram = architecture.slice(architecture.indexOf('```'), architecture.indexOf('```', architecture.indexOf('```') + 3));
const words = (text: string) => new Set(text.split(/[^a-z0-9-]+/));

describe('The guides match the tree', () => {
  it('finds the feature folders (so that the checks below check something)', () => {
    expect(featureFolders).to.include.members(['commands/ledger', 'queries/get-score', 'projections/usage']);
    expect(featureFolders.length).to.be.greaterThan(40);
  });

  for (const folder of featureFolders) {
    const name = folder.split('/')[1]!;
    it(`names ${folder}/ in the README's feature table and in docs/architecture.md's diagram`, () => {
      expect(readmeTable, 'README "Where to find a feature"').to.contain(`\`${name}/\``);
      expect(words(diagram).has(name), 'docs/architecture.md diagram').to.equal(true);
    });
  }

  for (const worker of WORKER_NAMES) {
    it(`names the background worker "${worker}" in both guides`, () => {
      expect(readmeTable).to.contain(`\`${worker}\``);
      expect(diagram).to.contain(`[${worker}]`);
    });
  }

  for (const folder of folders('infra')) {
    it(`names ${folder}/ in the README's table and in docs/architecture.md's list of adapters`, () => {
      const name = `\`${folder.split('/')[1]}/\``;
      expect(readmeTable.split('\n').find((row) => row.startsWith('| `infra/`')), 'README').to.contain(name);
      expect(paragraph(architecture, '- **`infra/`**'), 'docs/architecture.md').to.contain(name);
    });
  }

  it('starts every reactor from src/app/background-workers.ts', () => {
    const starter = read('src/app/background-workers.ts');
    const reactors = filesUnder('commands', '.reactor.ts');
    expect(reactors.length).to.be.greaterThan(5);
    for (const reactor of reactors) expect(starter, reactor).to.contain(`../../${reactor.replace(/\.ts$/, '.js')}`);
  });

  it('gives every *.decider.ts { initialState, evolve, decide } objects, each tested through decider-spec', async () => {
    const deciders = [...filesUnder('src/domain', '.decider.ts'), ...filesUnder('commands', '.decider.ts')];
    const tests = filesUnder('test/unit', '.test.ts').map((f) => read(f));
    expect(deciders.length).to.be.greaterThan(5);
    for (const file of deciders) {
      const exported = Object.entries((await import(pathToFileURL(join(root, file)).href)) as Record<string, unknown>);
      const shaped = exported.filter(([, v]) => {
        const d = v as Record<string, unknown> | null;
        return typeof d === 'object' && d !== null && ['initialState', 'evolve', 'decide'].every((k) => typeof d[k] === 'function');
      });
      expect(shaped.length, file).to.be.greaterThan(0);
      for (const [name] of shaped) {
        const spec = tests.find((t) => t.includes(relative('test/unit', file).replace(/\.ts$/, '.js')) && new RegExp(`deciderSpec(<[^(]*>)?\\(${name}\\b`).test(t));
        expect(spec, `a test/unit file running ${name} through deciderSpec`).to.not.equal(undefined);
      }
    }
  });

  it('names only paths that exist: every link and every `path/like/this` under a top folder, in the README and docs/', () => {
    const guides = ['README.md', ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const named = guides.flatMap((guide) => pathsNamed(guide, read(guide)).map((path) => ({ guide, path })));
    expect(named.length, 'paths found (so that the check checks something)').to.be.greaterThan(300);
    expect(named.filter((n) => !existsSync(join(root, n.path))).map((n) => `${n.guide}: ${n.path}`)).to.deep.equal([]);
  });

  it("explains every file role of the tree in the README's paragraph and in docs/architecture.md's table", () => {
    const roles = new Set(LAYERED.flatMap((dir) => filesUnder(dir, '.ts')).filter((f) => !f.includes('/generated/')).flatMap((f) => /\.([a-z-]+)\.ts$/.exec(f.split('/').pop()!)?.[1] ?? []));
    expect(roles.size, 'roles found').to.be.greaterThan(10);
    const readme = paragraph(read('README.md'), "A file's suffix says its role");
    const table = section(architecture, '### File roles');
    const missing = [...roles].filter((r) => !readme.includes(`*.${r}.ts`) || !table.includes(`*.${r}.ts`));
    expect(missing, 'roles to explain (README, docs/architecture.md "File roles")').to.deep.equal([]);
  });
});

/** The folders whose files carry a role in their name (generated code aside). */
const LAYERED = ['src/core', 'src/domain', 'src/web', 'src/app', 'commands', 'queries', 'projections', 'infra'];
const TOP_FOLDERS = new Set(['src', 'commands', 'queries', 'projections', 'infra', 'test', 'scripts', 'docs', 'clients', 'bin', '.ci']);

/**
 * The repository paths a guide names: its relative links, and code spans that start with a top
 * folder. Spans with a placeholder (`commands/<feature>/`, `*.ts`), a line number, or another
 * project's paths (written without our top folders) are left alone.
 */
function pathsNamed(guide: string, text: string): string[] {
  const paths = new Set<string>();
  for (const m of text.matchAll(/\]\(([^)\s#]+)(#[^)]*)?\)/g)) if (!/^[a-z]+:/.test(m[1]!)) paths.add(normalize(join(dirname(guide), m[1]!)));
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const span = m[1]!.replace(/:\d+(-\d+)?$/, '').replace(/[.,;]$/, '');
    if (/[<>*{}…$|]/.test(span) || !span.includes('/') || span.includes('..') || !TOP_FOLDERS.has(span.split('/')[0]!)) continue;
    paths.add(normalize(span));
  }
  return [...paths];
}
