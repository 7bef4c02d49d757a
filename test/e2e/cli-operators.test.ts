import { expect } from 'chai';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildCli } from '../../src/app/cli/main.js';
import { readDemoKeys } from '../../src/app/demo-keys.js';
import { projectRoot } from '../../src/core/paths.js';
import { KEY_PREFIX } from '../../src/domain/accounts/api-keys.js';
import { runCli, spawnCli, until, type Exit } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2019-01-10T12:00:00Z';

/** Each non-empty line parsed as JSON; a line that is not JSON fails the test, naming it. */
function jsonLines(text: string, what: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        const value = JSON.parse(line) as unknown;
        expect(value, `${what}: ${line}`).to.be.an('object');
        return value as Record<string, unknown>;
      } catch {
        throw new Error(`${what}: a line that is not JSON: ${line}`);
      }
    });
}

/** The commands that run (no subcommands) under their names from the program down. */
function leafCommands(command: Command, path: string[] = []): { path: string[]; command: Command }[] {
  return command.commands.flatMap((c) => (c.commands.length ? leafCommands(c, [...path, c.name()]) : [{ path: [...path, c.name()], command: c }]));
}

/** `scores serve ARGS` until its start banner (stderr) is out; the URL, then SIGTERM and its exit. */
async function serveOnce(args: string[], env: NodeJS.ProcessEnv, whileUp: (url: string) => Promise<void> = async () => undefined): Promise<Exit> {
  const { child, done } = spawnCli(['serve', ...args], env);
  let out = '';
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (d: Buffer) => (out += d.toString()));
  let exited = false;
  void done.then(() => (exited = true));
  const listening = /listening on (http:\/\/[^\s"]+)|"listening":"(http:\/\/[^"]+)"/;
  try {
    await until(() => listening.test(out) || exited, 120_000);
    const m = listening.exec(out);
    if (m) await whileUp((m[1] ?? m[2])!);
  } finally {
    child.kill('SIGTERM');
  }
  return done;
}

describe('Logs and CLI for operators', function () {
  this.timeout(240_000);
  const dir = tempDir('scores-operators-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('The log stream of a started server', () => {
    it('stdout carries only JSON lines and no key; the start banner and the keys file are elsewhere', async () => {
      const env = testEnv(dir, NOW, { LOG_LEVEL: 'debug' });
      const exit = await serveOnce([], env, async (url) => {
        const keys = readDemoKeys(dir);
        expect(keys).to.have.length.above(0);
        // Calls that write access-log lines: every demo key, one in the query string, a wrong one, MCP.
        for (const k of keys) await (await fetch(`${url}/v1/scores/AAPL`, { headers: { 'X-API-Key': k.key } })).arrayBuffer();
        await (await fetch(`${url}/v1/scores/AAPL?api_key=${keys[0]!.key}`)).arrayBuffer();
        await (await fetch(`${url}/v1/scores/AAPL`, { headers: { 'X-API-Key': `${KEY_PREFIX}${'x'.repeat(43)}` } })).arrayBuffer();
        const mcp = await fetch(`${url}/mcp/http`, {
          method: 'POST',
          headers: { 'X-API-Key': keys[0]!.key, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        await mcp.arrayBuffer();
      });
      expect(exit.code, exit.stderr).to.equal(0);
      const lines = jsonLines(exit.stdout, 'stdout');
      expect(lines.map((l) => l['msg'])).to.include.members(['listening', 'request']);
      const keys = readDemoKeys(dir);
      for (const k of keys) {
        expect(exit.stdout, `${k.tier}: its key`).to.not.include(k.key);
        expect(exit.stdout, `${k.tier}: its secret part`).to.not.include(k.key.slice(KEY_PREFIX.length + 6));
        // Not on a terminal: the banner names the file and the key ids, not the keys.
        expect(exit.stderr, `${k.tier}: its key on stderr`).to.not.include(k.key.slice(KEY_PREFIX.length + 6));
        expect(exit.stderr).to.include(`  ${k.tier.padEnd(10)} ${k.key_id} (${k.account_id})`);
      }
      expect(exit.stderr).to.match(/listening on http:\/\/localhost:\d+/);
      expect(exit.stderr).to.include(`kept in ${join(dir, 'demo-keys.json')}`);
    });
  });

  describe('The CLI', () => {
    const env = testEnv(dir, NOW, { SCORES_DEMO: 'off' });

    it('--version (and -V) prints the package version', async () => {
      const { version } = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
      for (const flag of ['--version', '-V']) {
        const r = await runCli([flag], env);
        expect(r.code, r.stderr).to.equal(0);
        expect(r.stdout).to.equal(`${version}\n`);
      }
    });

    const usageErrors: [string, string[], RegExp][] = [
      ['an unknown command', ['frobnicate'], /unknown command 'frobnicate'/],
      ['an unknown option', ['seed', '--bogus'], /unknown option '--bogus'/],
      ['a missing argument', ['ingest'], /missing required argument 'file'/],
      ['a bad option value', ['serve', '--port', 'abc'], /must be an integer 0-65535/],
      ['a bad argument value', ['pro', 'maybe', '--account', 'acct_x'], /expected "on" or "off"/],
      ['options that do not go together', ['audit', '--month', '2019-01'], /give either --account ID or --all/],
      ['no command', [], /Usage: scores/],
    ];
    for (const [what, args, message] of usageErrors) {
      it(`exits 2 on a usage error: ${what}; under --json the error is one JSON object on stderr`, async () => {
        const text = await runCli(args, env);
        expect(text.code, text.stderr).to.equal(2);
        expect(text.stderr).to.match(message);
        const json = await runCli([...args, '--json'], env);
        expect(json.code, json.stderr).to.equal(2);
        expect(json.stdout).to.equal('');
        const [problem, ...more] = jsonLines(json.stderr, 'stderr');
        expect(more).to.deep.equal([]);
        expect(problem).to.include({ code: 'usage', title: 'Usage error', exit_code: 2 });
        if (args.length) expect(problem!['detail']).to.match(message);
      });
    }

    it('exits 1 on a runtime error; under --json it is a problem object with the stable code', async () => {
      const free = JSON.parse((await runCli(['keys', 'create', '--tier', 'free'], env)).stdout) as { account_id: string };
      const runtimeErrors: [string[], string, RegExp][] = [
        [['ingest', join(dir, 'nowhere.csv')], 'file_unreadable', /cannot read .*nowhere\.csv: no such file/],
        [['ledger', 'export', '--account', 'acct_nobody'], 'not_found', /account acct_nobody has no credit ledger/],
        [['overage', 'on', '--account', free.account_id], 'bad_request', /bad_request|free/],
      ];
      for (const [args, code, message] of runtimeErrors) {
        const text = await runCli(args, env);
        expect(text.code, `${args.join(' ')}: ${text.stderr}`).to.equal(1);
        expect(text.stderr).to.match(message);
        const json = await runCli([...args, '--json'], env);
        expect(json.code, args.join(' ')).to.equal(1);
        expect(json.stdout).to.equal('');
        const [problem, ...more] = jsonLines(json.stderr, `${args.join(' ')} stderr`);
        expect(more).to.deep.equal([]);
        expect(problem, args.join(' ')).to.include({ code, exit_code: 1 });
        expect(problem!['title']).to.be.a('string').and.not.equal('');
        expect(problem!['detail']).to.match(message);
      }
    });
  });

  describe('Every command honours --json', () => {
    const scratch = tempDir('scores-operators-json-');
    const env = testEnv(scratch, NOW, { SCORES_DEMO: 'off', LOG_LEVEL: 'info' });
    after(() => rmSync(scratch, { recursive: true, force: true }));
    const ctx = { account: '', keyToRotate: '', keyToRevoke: '', keyToLimit: '', file: join(scratch, 'tickers.jsonl') };

    before(async () => {
      const create = async () => JSON.parse((await runCli(['keys', 'create', '--tier', 'builder'], env)).stdout) as { account_id: string; key_id: string };
      const first = await create();
      ctx.account = first.account_id;
      ctx.keyToRotate = first.key_id;
      ctx.keyToRevoke = (await create()).key_id;
      ctx.keyToLimit = (await create()).key_id;
      writeFileSync(ctx.file, `${JSON.stringify({ type: 'ticker', symbol: 'NEWCO', company: 'New Co', sector: 'Industrials', size_rank: 999 })}\n`);
    });

    /**
     * How to run each command (its arguments besides `--json`). The list of commands comes from
     * the program itself: a new command fails here until it has a row, and then until it honours --json.
     */
    const examples: Record<string, () => string[]> = {
      serve: () => ['--port', '0'],
      seed: () => [],
      replay: () => [],
      ingest: () => [ctx.file],
      'keys create': () => ['--tier', 'hobbyist'],
      'keys revoke': () => [ctx.keyToRevoke],
      'keys rotate': () => [ctx.keyToRotate, '--grace', '60'],
      'keys list': () => ['--account', ctx.account],
      'keys limits': () => [ctx.keyToLimit, '--daily-limit', '100'],
      'plan set': () => ['--account', ctx.account, '--tier', 'quant'],
      'plan cancel': () => ['--account', ctx.account],
      pro: () => ['on', '--account', ctx.account],
      overage: () => ['on', '--account', ctx.account],
      audit: () => ['--account', ctx.account],
      'ledger export': () => ['--account', ctx.account],
      'ledger head': () => ['--account', ctx.account],
      'ledger rotate-key': () => [],
      'ledger drop-snapshot': () => ['--all'],
      'rate-limit set': () => ['--account', ctx.account, '--per-second', '5'],
      'packs add': () => ['--account', ctx.account, '--credits', '100'],
      // Not the account the other examples use: its refusal for an unknown one (forget-account.test.ts forgets).
      'accounts forget': () => ['acct_unknown', '--yes'],
      backup: () => [join(scratch, 'backup-example')],
      // Into the data directory that holds the store: its refusal (backup-restore.test.ts restores).
      restore: () => [join(scratch, 'backup-example')],
      // No webhook of the account's: its refusal (`webhook-secrets.test.ts` rotates one).
      'webhooks rotate-secret': () => ['--account', ctx.account, '--webhook', '1'],
      'secrets rotate-key': () => [],
      'exports run': () => [],
      'exports list': () => [],
      'exports downloads': () => [],
      // Long-running on shared engines only (test/fleet runs them there): here, their refusals.
      worker: () => [],
      'fleet up': () => ['--api', '0'],
      // Into this data directory, which holds a store: its refusal (test/e2e/replicate.test.ts restores).
      'replicate restore': () => ['--from', join(scratch, 'no-replica')],
    };
    /** Commands whose example is a refusal: the exit code and the problem's stable code on stderr. */
    const refusals: Record<string, [exit: number, code: string]> = {
      worker: [1, 'config_invalid'],
      'fleet up': [2, 'usage'],
      'webhooks rotate-secret': [1, 'not_found'],
      'accounts forget': [1, 'not_found'],
      restore: [1, 'restore_target_not_empty'],
      'replicate restore': [1, 'restore_target_not_empty'],
    };

    for (const { path, command } of leafCommands(buildCli())) {
      const name = path.join(' ');
      it(`${name} --json: one JSON document on stdout`, async () => {
        expect(command.options.map((o) => o.long), `${name} declares --json`).to.include('--json');
        const example = examples[name];
        if (!example) expect.fail(`no example for \`${name}\` in this table: add one`);
        if (name === 'serve') {
          // stdout is the log stream (JSON lines); --json makes the start banner one JSON object on stderr.
          const exit = await serveOnce([...example(), '--json'], env);
          expect(exit.code, exit.stderr).to.equal(0);
          expect(jsonLines(exit.stdout, 'stdout').map((l) => l['msg'])).to.include('listening');
          const [banner, ...more] = jsonLines(exit.stderr, 'stderr');
          expect(more).to.deep.equal([]);
          expect(banner!['listening']).to.match(/^http:\/\/localhost:\d+$/);
          return;
        }
        const r = await runCli([...path, ...example(), '--json'], env);
        const refusal = refusals[name];
        if (refusal) {
          expect(r.code, `${name}: ${r.stderr}`).to.equal(refusal[0]);
          expect(r.stdout).to.equal('');
          const [problem, ...more] = jsonLines(r.stderr, 'stderr');
          expect(more).to.deep.equal([]);
          expect(problem!['code']).to.equal(refusal[1]);
          return;
        }
        expect(r.code, `${name}: ${r.stderr}`).to.equal(0);
        expect(() => JSON.parse(r.stdout) as unknown, `${name}: stdout is one JSON document:\n${r.stdout}`).to.not.throw();
        expect(JSON.parse(r.stdout)).to.be.an('object');
      });
    }
  });
});
