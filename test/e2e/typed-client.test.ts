import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { copyFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { projectRoot } from '../../src/core/paths.js';
import { getJson, startTestServer, tempDir, type TestServer } from '../support/server.js';

const exec = promisify(execFile);

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; a non-zero exit (or a kill at the timeout) is returned, not thrown. */
async function runProgram(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeout?: number }): Promise<Exit> {
  try {
    const { stdout, stderr } = await exec(file, args, { ...options, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string; killed?: boolean };
    if (e.stdout === undefined) throw err;
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout, stderr: `${e.stderr ?? ''}${e.killed ? '\n(killed at the timeout)' : ''}` };
  }
}

/** What both examples print, read back. */
interface ClientReport {
  creditsBefore: number;
  polls: { rows: number; credits: number }[];
  held: number;
  ledgerLines: number;
  ledgerPages: number;
  firstPollId: string;
  firstPollCharge: number;
}

function readReport(stdout: string): ClientReport {
  const match = (re: RegExp) => {
    const m = re.exec(stdout);
    if (!m) throw new Error(`no line matching ${re} in the output:\n${stdout}`);
    return m;
  };
  const polls = [...stdout.matchAll(/^poll \d+: (\d+) rows, next_since=.+, credits remaining: (\d+)$/gm)].map((m) => ({ rows: Number(m[1]), credits: Number(m[2]) }));
  const ledger = match(/^ledger: (\d+) lines, pages: (\d+); poll 1 \((\S+)\) was charged (\d+) credits$/m);
  return {
    creditsBefore: Number(match(/^credits remaining: (\d+)$/m)[1]),
    polls,
    held: Number(match(/^holding (\d+) rows of AAPL, MSFT$/m)[1]),
    ledgerLines: Number(ledger[1]),
    ledgerPages: Number(ledger[2]),
    firstPollId: ledger[3]!,
    firstPollCharge: Number(ledger[4]),
  };
}

describe('The client examples of docs/client-examples.md, against a live server', function () {
  this.timeout(180_000);
  const root = projectRoot();
  const example = join(root, 'docs/examples/typed-client');
  const work = tempDir('typed-client-');
  let server: TestServer;
  let compiled = false;

  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z' });
    // A customer's project: the example's files, its dependencies, and the types generated next.
    for (const file of ['client.ts', 'tsconfig.json', 'package.json']) copyFileSync(join(example, file), join(work, file));
    symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'), 'dir');
  });
  after(async () => {
    await server?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  /**
   * A fresh quant account with more than one page (100 lines) of ledger, and the figures the
   * example must print, read through the API: the balance before, and the rows a full sync returns.
   */
  async function account(): Promise<{ key: string; rows: number; credits: number }> {
    const { key } = await createAccountWithKey(server.services, { tier: 'quant' });
    await server.services.runner.waitForHead();
    for (let i = 0; i < 110; i++) expect((await getJson(`${server.url}/v1/scores/AAPL`, key)).status).to.equal(200);
    const history = await getJson(`${server.url}/v1/scores/history?tickers=AAPL,MSFT`, key);
    expect(history.status).to.equal(200);
    expect(history.body.count).to.be.above(0);
    const usage = await getJson(`${server.url}/v1/usage`, key);
    return { key, rows: history.body.count as number, credits: Number(usage.headers.get('x-credits-remaining')) };
  }

  /** The example's report checked against the API: the balance, the sync loop, the ledger pages. */
  async function expectReport(report: ClientReport, before: { key: string; rows: number; credits: number }): Promise<void> {
    expect(report.creditsBefore, 'X-Credits-Remaining of GET /v1/usage').to.equal(before.credits);
    // The first poll is the full sync (1 credit a row); the second, nothing having changed, is empty and free.
    expect(report.polls).to.deep.equal([
      { rows: before.rows, credits: before.credits - before.rows },
      { rows: 0, credits: before.credits - before.rows },
    ]);
    expect(report.held).to.equal(before.rows);
    const usage = await getJson(`${server.url}/v1/usage`, before.key);
    expect(Number(usage.headers.get('x-credits-remaining'))).to.equal(before.credits - before.rows);
    // Every line once: the newest line's seq (0-based, gap-free) + 1, over pages of 100.
    const newest = await getJson(`${server.url}/v1/usage/ledger?limit=1`, before.key);
    const lines = (newest.body.entries[0].seq as number) + 1;
    expect(report.ledgerLines).to.equal(lines);
    expect(report.ledgerPages).to.equal(Math.ceil(lines / 100)).and.to.be.above(1);
    expect(report.firstPollId).to.match(/^req_/);
    expect(report.firstPollCharge).to.equal(before.rows);
  }

  it('generates its types from the served /openapi.json and compiles under tsc --strict --noUncheckedIndexedAccess --exactOptionalPropertyTypes', async () => {
    const generate = await runProgram(process.execPath, [join(root, 'node_modules/openapi-typescript/bin/cli.js'), `${server.url}/openapi.json`, '-o', 'schema.d.ts'], { cwd: work });
    expect(generate.code, `openapi-typescript: ${generate.stderr}`).to.equal(0);

    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const build = await runProgram(process.execPath, [tsc, '-p', '.', '--strict', '--noUncheckedIndexedAccess', '--exactOptionalPropertyTypes', '--pretty', 'false'], { cwd: work });
    expect(build.code, `tsc exited with ${build.code}:\n${build.stdout}${build.stderr}`).to.equal(0);
    compiled = true;
  });

  it('the typed client reads its balance from the typed header, syncs with next_since and pages the whole ledger', async function () {
    if (!compiled) throw new Error('the example did not compile (previous test)');
    const before = await account();
    const env = { ...process.env, SCORES_API_URL: server.url, SCORES_API_KEY: before.key };
    const run = await runProgram(process.execPath, ['dist/client.js'], { cwd: work, env, timeout: 60_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).to.equal(0);
    await expectReport(readReport(run.stdout), before);
  });

  it('the Python example (plain requests) prints the same', async function () {
    const python = await runProgram('python3', ['-c', 'import requests'], { cwd: work }).catch(() => ({ code: -1 }));
    if (python.code !== 0) this.skip();
    const before = await account();
    const env = { ...process.env, SCORES_API_URL: server.url, SCORES_API_KEY: before.key };
    const run = await runProgram('python3', [join(root, 'docs/examples/python/client.py')], { cwd: work, env, timeout: 60_000 });
    expect(run.code, `${run.stdout}\n${run.stderr}`).to.equal(0);
    await expectReport(readReport(run.stdout), before);
  });
});
