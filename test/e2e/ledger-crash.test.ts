import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { foldLedger } from '../../src/domain/ledger/ledger.state.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { projectRoot } from '../../src/core/paths.js';
import { programArgs, runCli, until } from '../support/processes.js';
import { demoKey, tempDir, testEnv } from '../support/server.js';

const NOW = '2019-02-15T12:00:00Z';

describe('Credit ledger under kill -9', function () {
  this.timeout(180_000);
  const dir = tempDir();
  const env = testEnv(dir, NOW);
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the debit of every 200 response, and the audit passes for every account, ledger snapshots included', async () => {
    const server = spawn(process.execPath, programArgs('src/app/main.ts'), { cwd: projectRoot(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    server.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => server.on('exit', r));
    await until(() => /listening on (http:\/\/\S+)/.test(out), 90_000);
    const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;

    const charged = new Map<string, string>(); // request id → account
    const keys = { 'demo-free': demoKey(dir, 'free'), 'demo-hobbyist': demoKey(dir, 'hobbyist'), 'demo-builder': demoKey(dir, 'builder') };
    let stop = false;
    let refused = 0;
    const worker = async (account: string, key: string, path: string) => {
      while (!stop) {
        try {
          const res = await fetch(`${url}${path}`, { headers: { 'X-API-Key': key } });
          await res.arrayBuffer();
          if (res.status === 200) charged.set(res.headers.get('x-request-id')!, account);
          else if (res.status === 429) refused++;
        } catch {
          return; // the server is gone
        }
      }
    };
    const workers = Object.entries(keys).flatMap(([account, key]) => [
      worker(account, key, '/v1/scores/AAPL'),
      worker(account, key, '/v1/scores/MSFT/history?start=2019-02-01'),
      worker(account, key, '/v1/scores/NVDA'),
    ]);
    // Enough calls for the paid accounts to pass 1,000 events: snapshots are written under load,
    // and the kill falls somewhere between a snapshot and the appends after it.
    await until(() => charged.size >= 2_500 && refused > 0, 120_000, 10);
    server.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    await exited;
    expect(charged.size).to.be.at.least(2_500);
    expect(refused, 'the free account ran out of credits under load').to.be.greaterThan(0);

    // Restart: the audit catches the read models up from the log, then checks every account.
    const audit = await runCli(['audit', '--all', '--json'], env);
    expect(audit.code, audit.stdout + audit.stderr).to.equal(0);
    const report = JSON.parse(audit.stdout) as { ok: boolean; accounts: { account_id: string; snapshot: { status: string } }[] };
    expect(report).to.include({ ok: true });
    const snapshotted = report.accounts.filter((a) => a.snapshot.status === 'ok').map((a) => a.account_id);
    expect(snapshotted, 'accounts whose snapshot the audit found equal to the log').to.include.members(['demo-hobbyist', 'demo-builder']);
    // The operator drops a snapshot (a cache): the restarted service below folds that stream whole.
    const drop = await runCli(['ledger', 'drop-snapshot', '--account', 'demo-hobbyist'], env);
    expect(drop.code, drop.stderr).to.equal(0);
    expect(drop.stdout).to.equal('1 ledger snapshot dropped\n');
    const neither = await runCli(['ledger', 'drop-snapshot'], env);
    expect(neither.code).to.not.equal(0);
    expect(neither.stderr).to.include('give either --account ID or --all');

    const services = await openServices(loadConfig(env));
    try {
      const inLedger = new Set<string>();
      let free = { allowance: 0, used: 0 };
      for (const account of Object.keys(keys)) {
        // Each call's own line: a batch of calls stands for a line per call.
        const events = ((await services.events.readStream(ledgerStream(account))) as unknown as LedgerEvent[]).flatMap(ledgerLines);
        for (const e of events) {
          if (e.type === 'CreditsDebited') inLedger.add(e.data.request_id);
          if (account === 'demo-free' && e.type === 'AllowancePeriodOpened') free = { allowance: e.data.allowance ?? 0, used: 0 };
          if (account === 'demo-free' && e.type === 'CreditsDebited') free.used += e.data.from_allowance + e.data.from_prepaid;
        }
      }
      // A restarted service starts from the snapshots, and decides on the state the whole log gives.
      for (const account of Object.keys(keys)) {
        const events = await services.events.readStream(ledgerStream(account));
        expect(await services.ledger.state(account), account).to.deep.equal(foldLedger(events));
      }
      const missing = [...charged.keys()].filter((id) => !inLedger.has(id));
      expect(missing, 'request ids answered 200 but absent from the ledger').to.deep.equal([]);
      expect(free.used).to.be.at.most(free.allowance);
    } finally {
      await services.close();
    }
  });
});
