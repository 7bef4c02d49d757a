import { expect } from 'chai';
import { InMemoryEventBus } from '../../infra/memory/event-bus.js';
import { loadConfig } from '../../src/app/config.js';
import { getJson, startTestServer, testEnv, type TestServer } from '../support/server.js';

// `.ci/run` exports the engines' variables (from `npm run engines`) for the whole `npm test`, so
// that the adapters' contract suites run against them; every other test must still get the
// embedded store it was written for, not a shared broker and database.
describe('A service test run while the engines are exported', function () {
  // Every variable that moves a port to an engine or names a place there (test/support/server.ts's ENGINE_VARIABLES).
  const engines = {
    KAFKA_BROKERS: '127.0.0.1:9',
    MONGODB_URI: 'mongodb://127.0.0.1:9/',
    MONGODB_DB: 'elsewhere',
    ESDB_URL: 'esdb://127.0.0.1:9?tls=false',
    POSTGRES_URL: 'postgres://scores@127.0.0.1:9/scores',
    READ_STORE: 'mongodb',
    POSTGRES_READ_URL: 'postgres://scores@127.0.0.1:9/reads',
    READ_MODELS_SCHEMA: 'elsewhere',
  };
  let saved: Record<string, string | undefined>;
  let server: TestServer | undefined;

  before(() => {
    saved = Object.fromEntries(Object.keys(engines).map((k) => [k, process.env[k]]));
    Object.assign(process.env, engines);
  });

  after(async () => {
    await server?.stop();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });

  it('runs on the embedded store and bus', async function () {
    server = await startTestServer({ now: '2024-03-15T12:00:00Z', env: { SCORES_DEMO: 'off' } });

    const config = server.services.config;
    expect(config.kafkaBrokers).to.equal(null);
    expect(config.mongodbUri).to.equal(null);
    expect(config.esdbUrl).to.equal(null);
    expect(config.postgresUrl).to.equal(null);
    expect(config.readStore).to.equal('sqlite');
    expect(config.postgresReadUrl).to.equal(null);
    expect(server.services.bus).to.be.instanceOf(InMemoryEventBus);
    expect((await getJson(`${server.url}/healthz`)).status).to.equal(200);
  });

  it('reaches an engine only when the test names it', async function () {
    const env = testEnv('/tmp/unused', '2024-03-15T12:00:00Z', { KAFKA_BROKERS: '127.0.0.1:39092' });

    expect(env['KAFKA_BROKERS']).to.equal('127.0.0.1:39092');
    for (const name of Object.keys(engines).filter((n) => n !== 'KAFKA_BROKERS')) expect(env[name], name).to.equal(undefined);
  });

  it('puts the read models in PostgreSQL when the test names POSTGRES_URL alone, not where the exported READ_STORE, MONGODB_URI or READ_MODELS_SCHEMA say', function () {
    const url = 'postgres://scores@127.0.0.1:39432/scores_run';
    const config = loadConfig(testEnv('/tmp/unused', '2024-03-15T12:00:00Z', { POSTGRES_URL: url }));

    expect(config).to.include({ postgresUrl: url, readStore: 'postgres', postgresReadUrl: url, readModelsSchema: 'read_models', mongodbUri: null });
    // A sandbox's own place (test/support/engines-sandbox.ts) is named by the test too.
    const placed = loadConfig(testEnv('/tmp/unused', '2024-03-15T12:00:00Z', { POSTGRES_URL: url, READ_MODELS_SCHEMA: 'read_models_replay' }));
    expect(placed).to.include({ readStore: 'postgres', readModelsSchema: 'read_models_replay' });
  });
});
