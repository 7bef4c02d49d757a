import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_DEFAULT_SEED } from '../../commands/seed-demo/dataset/generate.js';
import { DEMO_KEY_FILE, readDemoKeys } from '../../src/app/demo-keys.js';
import { projectRoot } from '../../src/core/paths.js';
import { KEY_PREFIX, hashApiKey } from '../../src/domain/accounts/api-keys.js';
import { TIERS } from '../../src/domain/plans.js';
import { programArgs, spawnCli, until } from '../support/processes.js';
import { getJson, startTestServer, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-01-10T12:00:00Z';

/** How demo keys used to be made: from the public default seed, so anyone could compute them. */
const oldDerivation = (seed: number, tier: string) => KEY_PREFIX + createHmac('sha256', `scores-demo-${seed}`).update(tier).digest('base64url');

/** The bytes the embedded store holds (the database and its write-ahead log). */
const storeBytes = (dir: string) =>
  Buffer.concat(['scores.sqlite', 'scores.sqlite-wal'].filter((f) => existsSync(join(dir, f))).map((f) => readFileSync(join(dir, f))));

/**
 * `scores serve` on `dir` until it listens, then stopped; what it printed at start-up: its stderr,
 * or on a terminal (a pseudo-terminal from `script`) all of its output. The banner is written
 * before the process handles the stop, so the output at exit holds all of it.
 */
async function startUpMessage(dir: string, terminal = false): Promise<string> {
  if (!terminal) {
    const { child, done } = spawnCli(['serve'], testEnv(dir, NOW));
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await until(() => err.includes('listening on'), 120_000);
    } finally {
      child.kill('SIGTERM');
    }
    expect((await done).code).to.equal(0);
    return err;
  }
  // `exec`: script runs the command through $SHELL, /bin/sh (dash) where SHELL is unset as in CI,
  // and dash stays as the terminal's session leader: a Ctrl-C killed it (exit 130) as well.
  const command = `exec ${[process.execPath, ...programArgs('src/app/cli/bin.ts'), 'serve'].map((w) => `'${w}'`).join(' ')}`;
  const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: projectRoot(), env: testEnv(dir, NOW, { LOG_LEVEL: 'info' }), stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString().replace(/\r\n/g, '\n')));
  // On a terminal the log is readable lines, not JSON: the server is stopped as a user stops it,
  // with Ctrl-C typed into its terminal (SIGINT to the foreground process).
  try {
    await until(() => /INFO.*listening/.test(out), 120_000);
  } finally {
    if (/INFO.*listening/.test(out)) child.stdin.write('\x03');
    else child.kill('SIGKILL');
  }
  expect(await exited, `exit status; the terminal showed:\n${out}`).to.equal(0);
  return out;
}

describe('Demo keys: random per store, kept in a file of the data directory', function () {
  this.timeout(180_000);
  const dirs = [tempDir('scores-demo-keys-a-'), tempDir('scores-demo-keys-b-')];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('two fresh stores get different random keys, none derivable from the seed; the file is 0600 and the store holds only hashes', async () => {
    const shown: Record<string, string>[] = [];
    for (const dir of dirs) {
      const server = await startTestServer({ now: NOW, dir });
      try {
        const file = readDemoKeys(dir);
        expect(file.map((k) => k.tier).sort()).to.deep.equal([...TIERS].sort());
        expect(server.running.demoKeys.map((k) => [k.tier, k.key])).to.deep.equal(file.map((k) => [k.tier, k.key]));
        expect(server.running.demoKeysUnknown).to.deep.equal([]);
        expect(server.running.demoKeyFile).to.equal(join(dir, DEMO_KEY_FILE));
        for (const k of file) {
          expect(k.key).to.match(/^sk_live_[A-Za-z0-9_-]{43}$/);
          expect(k.key).to.not.equal(oldDerivation(DEMO_DEFAULT_SEED, k.tier));
          expect(k.key_id).to.match(/^key_/);
          expect(k.account_id).to.equal(`demo-${k.tier}`);
        }
        // They work.
        const quant = file.find((k) => k.tier === 'quant')!.key;
        expect((await getJson(`${server.url}/v1/scores/AAPL`, quant)).status).to.equal(200);
        shown.push(Object.fromEntries(file.map((k) => [k.tier, k.key])));
      } finally {
        await server.stop();
      }
      expect(statSync(join(dir, DEMO_KEY_FILE)).mode & 0o777).to.equal(0o600);
      const bytes = storeBytes(dir);
      for (const k of readDemoKeys(dir)) {
        expect(bytes.includes(k.key), `${k.tier}: the key in clear`).to.equal(false);
        expect(bytes.includes(k.key.slice(KEY_PREFIX.length + 6)), `${k.tier}: its secret part`).to.equal(false);
        expect(bytes.includes(hashApiKey(k.key)), `${k.tier}: its hash`).to.equal(true);
      }
    }
    for (const tier of TIERS) expect(shown[0]![tier], tier).to.not.equal(shown[1]![tier]);
  });

  it('a restart shows the same keys from the file, and prints them on a terminal only', async () => {
    const [dir] = dirs as [string];
    const before = readDemoKeys(dir);
    const server = await startTestServer({ now: NOW, dir });
    try {
      expect(server.running.demoKeys).to.deep.equal(before);
    } finally {
      await server.stop();
    }
    const onTerminal = await startUpMessage(dir, true);
    for (const k of before) expect(onTerminal).to.include(`  ${k.tier.padEnd(10)} ${k.key}\n`);
    expect(onTerminal).to.include(`kept in ${join(dir, DEMO_KEY_FILE)}, readable by its owner only`);
    expect(onTerminal).to.match(/try: curl -H 'X-API-Key: sk_live_/);
    // Elsewhere (a pipe, a log collector): the file and the key ids, never a key.
    const piped = await startUpMessage(dir);
    for (const k of before) {
      expect(piped).to.include(`  ${k.tier.padEnd(10)} ${k.key_id} (${k.account_id})\n`);
      expect(piped).to.not.include(k.key.slice(KEY_PREFIX.length + 6));
    }
    expect(piped).to.include(`kept in ${join(dir, DEMO_KEY_FILE)}, readable by its owner only; shown on a terminal only`);
    expect(piped).to.not.include('try: curl');
  });

  it('with the file lost, the keys cannot be shown again: the start-up says so and offers `scores keys rotate`; the old keys still work', async () => {
    const [dir] = dirs as [string];
    const before = readDemoKeys(dir);
    rmSync(join(dir, DEMO_KEY_FILE));
    const server = await startTestServer({ now: NOW, dir });
    try {
      expect(server.running.demoKeys).to.deep.equal([]);
      expect(server.running.demoKeysUnknown.map((u) => [u.tier, u.key_ids])).to.deep.equal(before.map((k) => [k.tier, [k.key_id]]));
      expect(existsSync(join(dir, DEMO_KEY_FILE)), 'no new file, no new keys').to.equal(false);
      const quant = before.find((k) => k.tier === 'quant')!.key;
      expect((await getJson(`${server.url}/v1/scores/AAPL`, quant)).status).to.equal(200);
    } finally {
      await server.stop();
    }
    const out = await startUpMessage(dir);
    for (const k of before) {
      expect(out).to.include(`  ${k.tier.padEnd(10)} not in the file, cannot be shown again (active: ${k.key_id})`);
      expect(out).to.not.include(k.key);
    }
    expect(out).to.include('npx scores keys rotate <key_id>');
    expect(out).to.not.include('try: curl');
  });
});
