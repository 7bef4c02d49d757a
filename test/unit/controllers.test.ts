import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';

// tsoa registers the REST routes in the order src/app/http/controllers.ts imports the controllers
// (tsoa.json reads that file alone): a controller it does not list would serve nothing.

const root = projectRoot();
const read = (file: string) => readFileSync(join(root, file), 'utf8');

describe('The controller list tsoa reads (src/app/http/controllers.ts)', () => {
  it('is the only input of tsoa.json', () => {
    const tsoa = JSON.parse(read('tsoa.json')) as { controllerPathGlobs: string[] };
    expect(tsoa.controllerPathGlobs).to.deep.equal(['src/app/http/controllers.ts']);
  });

  it('imports every controller under commands/ and queries/, once', () => {
    const controllers = ['commands', 'queries'].flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.controller.ts') && /@Route\(/.test(read(join(dir, f))))
        .map((f) => `${dir}/${f.replace(/\\/g, '/').replace(/\.ts$/, '.js')}`),
    );
    const listed = [...read('src/app/http/controllers.ts').matchAll(/^import '\.\.\/\.\.\/\.\.\/(.+)';$/gm)].map((m) => m[1]!);
    expect(controllers).to.not.be.empty;
    expect([...listed].sort()).to.deep.equal([...controllers].sort());
  });
});
