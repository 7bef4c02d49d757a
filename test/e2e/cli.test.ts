import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startServerProcess, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-02-15T12:00:00Z';

describe('The scores CLI', function () {
  this.timeout(120_000);
  const dir = tempDir();
  const env = testEnv(dir, NOW, { PORT: '0' });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('When the demo dataset is off', () => {
    it('seed says it wrote nothing, and writes nothing', async () => {
      const empty = tempDir();
      try {
        const r = await runCli(['seed', '--json'], testEnv(empty, NOW, { SCORES_DEMO: 'off' }));
        expect(r.code, r.stderr).to.equal(0);
        expect(JSON.parse(r.stdout)).to.deep.equal({ before: null, head: null, demo: false });
        const text = await runCli(['seed'], testEnv(empty, NOW, { SCORES_DEMO: 'off' }));
        expect(text.stdout).to.match(/^the demo dataset is off \(SCORES_DEMO=off\): nothing written/);
      } finally {
        rmSync(empty, { recursive: true, force: true });
      }
    });
  });

  describe('When the ingest file cannot be read', () => {
    it('says so in one line, without a stack trace', async () => {
      const missing = join(dir, 'nowhere.csv');
      const r = await runCli(['ingest', missing], env);
      expect(r.code).to.equal(1);
      expect(r.stderr.trim()).to.equal(`cannot read ${missing}: no such file`);
    });
  });

  describe('When an ingest file has one bad row', () => {
    it('exits non-zero, names the row and writes nothing', async () => {
      expect((await runCli(['seed', '--json'], env)).code).to.equal(0);
      const before = JSON.parse((await runCli(['seed', '--json'], env)).stdout) as { head: string };
      const file = join(dir, 'bad.csv');
      writeFileSync(file, ['ticker,date,main_street,wall_street', 'AAPL,2019-02-14,50,50', 'MSFT,2019-02-14,fifty,50', 'AMZN,2019-02-14,40,50'].join('\n'));
      const r = await runCli(['ingest', file], env);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(/line 3: main_street/).and.match(/nothing was written/);
      const after = JSON.parse((await runCli(['seed', '--json'], env)).stdout) as { head: string };
      expect(after.head).to.equal(before.head);
    });
  });

  describe('When the CLI appends while the server runs', () => {
    it('the server serves the new data without a restart: it follows the log', async () => {
      const server = await startServerProcess(env);
      const url = server.url;
      try {
        const file = join(dir, 'new.jsonl');
        writeFileSync(
          file,
          [
            JSON.stringify({ type: 'ticker', symbol: 'NEWCO', company: 'New Co', sector: 'Industrials', size_rank: 999 }),
            JSON.stringify({ type: 'score', ticker: 'NEWCO', date: '2019-02-14', main_street: 71, wall_street: 33 }),
          ].join('\n'),
        );
        expect((await runCli(['ingest', file], env)).code).to.equal(0);
        const key = { headers: { 'X-API-Key': demoKey(dir, 'hobbyist') } };
        // That it comes, not how soon: the follower's lag is not a figure a test can hold on a shared machine.
        await until(async () => (await fetch(`${url}/v1/scores/NEWCO`, key)).status === 200, 30_000, 50);
        const body = (await (await fetch(`${url}/v1/scores/NEWCO`, key)).json()) as Record<string, unknown>;
        expect(body).to.include({ ticker: 'NEWCO', main_street: 71, wall_street: 33, divergence_gap: 38 });
      } finally {
        await server.stop();
      }
    });
  });
});
