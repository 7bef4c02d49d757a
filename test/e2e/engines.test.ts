import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Webhook } from 'standardwebhooks';
import { INGEST_TOPIC } from '../../commands/ingest/ingest.reactor.js';
import { WEBHOOK_DELIVER_TOPIC } from '../../commands/deliver-webhooks/webhook-dispatch.reactor.js';
import { KafkaEventBus } from '../../infra/kafka/event-bus.js';
import { allProjections } from '../../projections/index.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { ledgerLines, ledgerStream, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import type { ReadStore } from '../../src/core/read-store.port.js';
import type { WebhookEnvelope } from '../../src/domain/webhooks/webhook-envelope.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/receiver-certificate.js';
import { runCli, spawnCli, until, type Exit } from '../support/processes.js';
import { FLEET_ENGINES, FLEET_READ_STORE, openEnginesSandbox, unsetEngines, type EnginesSandbox } from '../support/engines-sandbox.js';
import { demoKey, getJson } from '../support/server.js';

/** About 60 trading days of the demo: the seed is a thousand events. */
const NOW = '2019-03-29T12:00:00Z';

interface ServeProcess {
  url: string;
  child: ChildProcess;
  done: Promise<Exit>;
}

/** `scores serve` as its own process; resolves once its start banner (stderr) names the URL. */
async function serve(env: NodeJS.ProcessEnv): Promise<ServeProcess> {
  const { child, done } = spawnCli(['serve'], env);
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const listening = /listening on (http:\/\/\S+)/;
  await until(() => listening.test(err) || child.exitCode !== null, 240_000, 100);
  if (!listening.test(err)) throw new Error(`scores serve exited before listening:\n${(await done).stderr}`);
  return { url: listening.exec(err)![1]!, child, done };
}

async function stopGracefully(server: ServeProcess | null): Promise<void> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill('SIGTERM');
  await server.done;
}

/** Every read model document and checkpoint of the projections, through the ReadStore port. */
async function readModels(store: ReadStore): Promise<{ checkpoints: Record<string, string | null>; collections: Record<string, unknown[]> }> {
  const checkpoints: Record<string, string | null> = {};
  const collections: Record<string, unknown[]> = {};
  for (const projection of allProjections()) {
    checkpoints[projection.name] = await store.checkpoint(projection.name);
    for (const def of projection.collections) {
      const docs: unknown[] = [];
      for await (const doc of store.scan(def)) docs.push(doc);
      collections[def.name] = docs;
    }
  }
  return { checkpoints, collections };
}

/**
 * The whole service on the engines `npm run engines` starts: `scores serve` as a real process with
 * its event log on PostgreSQL, its read models on FLEET_READ_STORE (PostgreSQL; FerretDB, the
 * MongoDB wire, with SCORES_FLEET_READ_STORE=mongodb) and its bus on Kafka, each in a database
 * (a schema or a MongoDB-wire database for the read models) and topic prefix of its own for this run.
 */
describe(`The whole service on the engines (PostgreSQL log, ${FLEET_READ_STORE === 'postgres' ? 'PostgreSQL' : 'FerretDB'} read models, Kafka bus)`, function () {
  this.timeout(600_000);
  const unset = unsetEngines(FLEET_ENGINES);
  if (unset.length > 0) {
    it(`runs when ${FLEET_ENGINES.join(', ')} are set (npm run engines starts them and prints them; unset: ${unset.join(', ')})`);
    return;
  }
  let sandbox: EnginesSandbox;
  let env: NodeJS.ProcessEnv;
  let database: string;
  let dir: string;
  let server: ServeProcess | null = null;
  let receiver: HttpsReceiver | undefined;
  /** A bus of this run's prefix, as an operator's tools would use it. */
  let bus: KafkaEventBus;
  const stores: ReadStore[] = [];

  before(async () => {
    sandbox = await openEnginesSandbox('e2e', NOW, { kafka: true, readStore: FLEET_READ_STORE });
    ({ database, dir } = sandbox);
    receiver = await startHttpsReceiver(dir);
    env = { ...sandbox.env, WEBHOOK_CA_FILE: receiver.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' };
    bus = new KafkaEventBus({ brokers: process.env['KAFKA_BROKERS']!.split(','), clientId: 'scores-e2e', prefix: sandbox.prefix, logLevel: 'nothing' });
  });

  after(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.done;
    }
    await bus?.close();
    for (const store of stores) await store.close().catch(() => undefined);
    await receiver?.close();
    // The replay's place: a MongoDB-wire database of its own (on PostgreSQL a schema, dropped with the database).
    await sandbox?.drop([`${database}_replay`]);
  });

  it('seeds, meters REST and MCP, ingests a restatement from Kafka, delivers its webhook through the consumer group, exports, audits, and a replay equals the live read models', async () => {
    server = await serve(env);
    const url = server.url;
    const hobbyist = demoKey(dir, 'hobbyist');
    const quant = demoKey(dir, 'quant');

    // Metered REST calls: each 200 is a debit in the account's ledger, under its request id.
    const first = await getJson(`${url}/v1/scores/AAPL`, hobbyist);
    const second = await getJson(`${url}/v1/scores/MSFT`, hobbyist);
    expect([first.status, second.status], JSON.stringify(first.body)).to.deep.equal([200, 200]);
    expect(first.body).to.include({ ticker: 'AAPL', as_of: '2019-03-28' });
    expect(Number(second.headers.get('x-credits-remaining'))).to.be.below(Number(first.headers.get('x-credits-remaining')));

    // A metered MCP call over the Streamable HTTP transport.
    const client = new Client({ name: 'engines-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/http`), { requestInit: { headers: { 'X-API-Key': hobbyist } } }));
    try {
      const viaMcp = (await client.callTool({ name: 'get_scores', arguments: { ticker: 'NVDA' } })) as CallToolResult;
      expect(viaMcp.isError, JSON.stringify(viaMcp.content)).to.not.equal(true);
      expect(viaMcp.structuredContent).to.include({ ticker: 'NVDA' });
    } finally {
      await client.close();
    }
    const ledger = await getJson(`${url}/v1/usage/ledger`, hobbyist);
    const debits = (ledger.body['entries'] as { kind: string; request_id: string; channel: string }[]).filter((e) => e.kind === 'CreditsDebited');
    expect(debits.map((d) => d.request_id)).to.include.members([first.headers.get('x-request-id'), second.headers.get('x-request-id')]);
    expect(debits.map((d) => d.channel)).to.include('mcp');

    // A score_move webhook, then a restatement of AAPL's last day through the Kafka ingest topic.
    const registered = await fetch(`${url}/v1/webhooks`, {
      method: 'POST',
      headers: { 'X-API-Key': quant, 'Content-Type': 'application/json' },
      body: JSON.stringify({ event_type: 'score_move', url: `https://localhost:${receiver!.port}/hooks/scores` }),
    });
    expect(registered.status).to.equal(201);
    const hook = (await registered.json()) as { id: number; secret: string };
    // Another consumer group on the delivery topic sees what the service's group is handed.
    const handed: string[] = [];
    await bus.subscribe({ topic: WEBHOOK_DELIVER_TOPIC, group: 'e2e-observer', fromBeginning: true, handler: async (m) => void handed.push(m.value) });
    const restated = Number(first.body['service_score']) < 50 ? 95 : 5;
    await bus.publish(INGEST_TOPIC, [
      { key: 'AAPL', value: JSON.stringify({ type: 'score', ticker: 'AAPL', date: '2019-03-28', main_street: restated, wall_street: restated }) },
    ]);
    await until(async () => (await getJson(`${url}/v1/scores/AAPL`, quant)).body['main_street'] === restated, 60_000, 250);
    await until(() => receiver!.received.length > 0, 60_000, 100);
    const envelope = new Webhook(hook.secret).verify(receiver!.received[0]!.body, receiver!.received[0]!.headers as Record<string, string>) as WebhookEnvelope;
    expect(envelope.events.map((e) => [e.type, e.ticker, e.date])).to.deep.equal([['score_move', 'AAPL', '2019-03-28']]);
    await until(() => handed.some((v) => (JSON.parse(v) as { webhook_id: number }).webhook_id === hook.id), 30_000, 100);
    let deliveries: Record<string, unknown>[] = [];
    await until(async () => {
      deliveries = (await getJson(`${url}/v1/webhooks/${hook.id}/deliveries`, quant)).body['deliveries'] as Record<string, unknown>[];
      return deliveries.length > 0;
    }, 30_000, 250);
    expect(deliveries[0]).to.include({ kind: 'live', event_type: 'score_move', ok: true, status_code: 204 });

    // An export bundle by the CLI beside the server, downloaded from it.
    const exported = await runCli(['exports', 'run', '--json'], env);
    expect(exported.code, exported.stderr).to.equal(0);
    const bundle = JSON.parse(exported.stdout) as { run_id: string; files: { name: string; sha256: string; row_count: number }[] };
    let listed: { name: string; url: string; sha256: string }[] = [];
    await until(async () => {
      listed = ((await getJson(`${url}/v1/bulk/exports`, quant)).body['exports'] as typeof listed | undefined) ?? [];
      return listed.length > 0 && listed.every((f) => f.url.includes(`/${bundle.run_id}/`));
    }, 30_000, 250);
    const history = listed.find((f) => f.name === 'scores_history.csv.gz')!;
    const file = await fetch(history.url, { headers: { 'X-API-Key': quant } });
    expect(file.status).to.equal(200);
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(createHash('sha256').update(bytes).digest('hex')).to.equal(history.sha256);
    expect(bundle.files.find((f) => f.name === history.name)!.sha256).to.equal(history.sha256);

    // The audit, from another process, over every account.
    const audit = await runCli(['audit', '--all', '--json'], env);
    expect(audit.code, audit.stdout + audit.stderr).to.equal(0);
    expect(JSON.parse(audit.stdout)).to.include({ ok: true });

    // A replay of the PostgreSQL log into read models of its own equals what the server keeps live.
    const replayPlace = sandbox.readModels('replay');
    const replay = await runCli(['replay', '--json'], { ...env, ...replayPlace.env, SCORES_DATA_DIR: join(dir, 'replay') });
    expect(replay.code, replay.stderr).to.equal(0);
    const live = sandbox.readModels().open();
    const rebuilt = replayPlace.open();
    stores.push(live, rebuilt);
    const replayed = await readModels(rebuilt);
    await until(async () => JSON.stringify((await readModels(live)).checkpoints) === JSON.stringify(replayed.checkpoints), 30_000, 500);
    const served = await readModels(live);
    expect(Object.keys(replayed.collections)).to.have.length.greaterThan(10);
    expect(replayed.collections['latest_scores']).to.have.length.greaterThan(100);
    for (const name of Object.keys(replayed.collections)) expect(served.collections[name], name).to.deep.equal(replayed.collections[name]);
  });

  it('loses no acknowledged call and doubles none when the server is killed -9 under load and restarted', async () => {
    expect(server, 'the server of the first test').to.not.equal(null);
    const url = server!.url;
    const accounts = ['demo-free', 'demo-hobbyist', 'demo-builder'] as const;
    const keys = Object.fromEntries(accounts.map((a) => [a, demoKey(dir, a.slice('demo-'.length) as 'free' | 'hobbyist' | 'builder')]));
    const charged = new Map<string, string>(); // request id → account
    let stop = false;
    const worker = async (account: string, path: string) => {
      while (!stop) {
        try {
          const res = await fetch(`${url}${path}`, { headers: { 'X-API-Key': keys[account]! } });
          await res.arrayBuffer();
          if (res.status === 200) charged.set(res.headers.get('x-request-id')!, account);
        } catch {
          return; // the server is gone
        }
      }
    };
    const workers = accounts.flatMap((a) => [worker(a, '/v1/scores/AAPL'), worker(a, '/v1/scores/KO'), worker(a, '/v1/scores/MSFT/history?start=2019-03-01')]);
    await until(() => charged.size >= 600, 120_000, 10);
    server!.child.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    expect((await server!.done).signal).to.equal('SIGKILL');

    // The restarted server serves again, from the same engines.
    server = await serve(env);
    const after = await getJson(`${server.url}/v1/scores/AAPL`, keys['demo-builder']);
    expect(after.status).to.equal(200);
    charged.set(after.headers.get('x-request-id')!, 'demo-builder');

    const services = await openServices(loadConfig(env));
    try {
      const seen = new Map<string, { account: string; times: number }>();
      for (const account of accounts) {
        const events = ((await services.events.readStream(ledgerStream(account))) as unknown as LedgerEvent[]).flatMap(ledgerLines);
        for (const e of events) {
          if (e.type !== 'CreditsDebited') continue;
          const s = seen.get(e.data.request_id);
          seen.set(e.data.request_id, { account, times: (s?.times ?? 0) + 1 });
        }
      }
      const lost = [...charged].filter(([id, account]) => seen.get(id)?.account !== account);
      const doubled = [...seen].filter(([, s]) => s.times > 1);
      expect(lost, 'request ids answered 200 and absent from their account ledger').to.deep.equal([]);
      expect(doubled, 'request ids debited more than once').to.deep.equal([]);
      expect(charged.size).to.be.at.least(600);
    } finally {
      await services.close();
    }
    const audit = await runCli(['audit', '--all', '--json'], env);
    expect(audit.code, audit.stdout + audit.stderr).to.equal(0);
    await stopGracefully(server);
    expect((await server.done).code).to.equal(0);
  });
});
