import { expect } from 'chai';
import { InMemoryEventBus } from '../../infra/memory/event-bus.js';
import { getJson, startTestServer, testEnv, type TestServer } from '../support/server.js';

// `.ci/run` exports the engines' variables (from `npm run engines`) for the whole `npm test`, so
// that the adapters' contract suites run against them; every other test must still get the
// embedded store it was written for, not a shared broker and database.
describe('A service test run while the engines are exported', function () {
  const engines = {
    KAFKA_BROKERS: '127.0.0.1:9',
    MONGODB_URI: 'mongodb://127.0.0.1:9/',
    ESDB_URL: 'esdb://127.0.0.1:9?tls=false',
    POSTGRES_URL: 'postgres://scores@127.0.0.1:9/scores',
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

    expect(server.services.config.kafkaBrokers).to.equal(null);
    expect(server.services.config.mongodbUri).to.equal(null);
    expect(server.services.config.esdbUrl).to.equal(null);
    expect(server.services.bus).to.be.instanceOf(InMemoryEventBus);
    expect((await getJson(`${server.url}/healthz`)).status).to.equal(200);
  });

  it('reaches an engine only when the test names it', async function () {
    const env = testEnv('/tmp/unused', '2024-03-15T12:00:00Z', { KAFKA_BROKERS: '127.0.0.1:39092' });

    expect(env['KAFKA_BROKERS']).to.equal('127.0.0.1:39092');
    expect(env['MONGODB_URI']).to.equal(undefined);
    expect(env['POSTGRES_URL']).to.equal(undefined);
  });
});
