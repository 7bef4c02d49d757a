import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WORKER_NAMES } from '../../src/app/background-workers.js';
import { projectRoot } from '../../src/core/paths.js';

/**
 * The guides name what is in the tree: a feature folder or a background worker added without a
 * line in the README's feature table and in docs/architecture.md's diagram fails here, and so
 * does a reactor nobody starts or a decider of another shape.
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
});
