import { expect } from 'chai';
import { ESLint } from 'eslint';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';

/**
 * The write-path rule of `npm run lint` (eslint.config.js, `decider/appends-through-handler`):
 * real files of the tree, linted with one line added, must be refused when the line appends to
 * the event store outside the command handler, and pass otherwise.
 */
const RULE = 'decider/appends-through-handler';

describe('The write-path rule of npm run lint', () => {
  const eslint = new ESLint({ cwd: projectRoot() });
  const hits = async (file: string, added = ''): Promise<string[]> => {
    const text = readFileSync(join(projectRoot(), file), 'utf8') + added;
    const [result] = await eslint.lintText(text, { filePath: join(projectRoot(), file) });
    return result!.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
  };

  it('refuses a command that appends to the event store itself, one stream or several', async () => {
    const one = "\nexport const sneak = (deps: SignInDeps) => deps.events.append('signin-x', [{ type: 'SignInLinkSent', data: {} }], 'no_stream');\n";
    const many = "\nexport const sneakMany = (deps: SignInDeps) => deps.events.appendMany([{ streamId: 'signin-x', events: [] }]);\n";
    expect(await hits('commands/sign-in/sign-in.handler.ts', one + many)).to.deep.equal([
      '`append` on an event store outside the command handler: run a decider through handleCommand (src/core/command-handler.ts)',
      '`appendMany` on an event store outside the command handler: run a decider through handleCommand (src/core/command-handler.ts)',
    ]);
  });

  it('refuses a controller that records what it did by appending', async () => {
    const added = "\nexport const record = (ctx: { events: import('../../src/core/event-store.port.js').EventStore }) => ctx.events.append('export-downloads-a', []);\n";
    expect(await hits('commands/export-bundles/bulk-download.controller.ts', added)).to.have.length(1);
  });

  it('accepts the tree as it is, the handler appending, and an append that is no store’s', async () => {
    expect(await hits('commands/sign-in/sign-in.handler.ts')).to.deep.equal([]);
    expect(await hits('src/core/command-handler.ts')).to.deep.equal([]);
    expect(await hits('src/web/response-headers.ts', "\nexport const other = (p: URLSearchParams) => p.append('a', 'b');\n")).to.deep.equal([]);
  });
});
