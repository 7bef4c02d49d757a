import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/app/config.js';

describe('Configuration', () => {
  it('takes an empty variable for an unset one: the default, not 0 or the current directory', () => {
    const c = loadConfig({ PORT: '', SCORES_DATA_DIR: ' ', HOST: '', SCORES_DEMO: '', LOG_LEVEL: '' });
    expect(c.port).to.equal(8080);
    expect(c.host).to.equal('0.0.0.0');
    expect(c.dataDir).to.equal(loadConfig({}).dataDir).and.match(/[/\\]data$/);
    expect(c.demo).to.equal(true);
    expect(() => loadConfig({ PORT: 'abc' })).to.throw(ConfigError, /PORT/);
    expect(loadConfig({ PORT: '0' }).port).to.equal(0);
  });

  it('reads POSTGRES_URL, the PostgreSQL event log that `npm run engines` prints', () => {
    expect(loadConfig({ POSTGRES_URL: 'postgres://scores@127.0.0.1:35432/scores' }).postgresUrl).to.equal('postgres://scores@127.0.0.1:35432/scores');
    expect(loadConfig({ POSTGRES_URL: ' ' }).postgresUrl).to.equal(null);
  });

  it('shares the rate limits in PostgreSQL when POSTGRES_URL is set, unless RATE_LIMIT_STORE=memory', () => {
    const pg = 'postgres://scores@127.0.0.1:35432/scores';
    expect(loadConfig({}).rateLimitStore).to.equal('memory');
    expect(loadConfig({ POSTGRES_URL: pg }).rateLimitStore).to.equal('postgres');
    expect(loadConfig({ POSTGRES_URL: pg, RATE_LIMIT_STORE: 'memory' }).rateLimitStore).to.equal('memory');
    expect(loadConfig({ POSTGRES_URL: pg, RATE_LIMIT_STORE: ' ' }).rateLimitStore).to.equal('postgres');
    expect(() => loadConfig({ RATE_LIMIT_STORE: 'postgres' })).to.throw(ConfigError, /RATE_LIMIT_STORE: postgres needs POSTGRES_URL/);
    expect(() => loadConfig({ RATE_LIMIT_STORE: 'redis' })).to.throw(ConfigError, /RATE_LIMIT_STORE/);
  });

  it('waits RATE_LIMIT_STORE_TIMEOUT_MS (250 unless set) for the shared bucket, and refuses a wait that is not a positive number of ms', () => {
    expect(loadConfig({}).rateLimitStoreTimeoutMs).to.equal(250);
    expect(loadConfig({ RATE_LIMIT_STORE_TIMEOUT_MS: '1000' }).rateLimitStoreTimeoutMs).to.equal(1000);
    for (const bad of ['0', '-5', 'soon', '1.5']) expect(() => loadConfig({ RATE_LIMIT_STORE_TIMEOUT_MS: bad })).to.throw(ConfigError, /RATE_LIMIT_STORE_TIMEOUT_MS/);
  });

  it('bounds free answers to FREE_ANSWER_BYTES_PER_SECOND (256 KiB unless set), or not at all with off', () => {
    expect(loadConfig({}).freeAnswerBytesPerSecond).to.equal(262_144);
    expect(loadConfig({ FREE_ANSWER_BYTES_PER_SECOND: '1048576' }).freeAnswerBytesPerSecond).to.equal(1_048_576);
    expect(loadConfig({ FREE_ANSWER_BYTES_PER_SECOND: 'off' }).freeAnswerBytesPerSecond).to.equal(null);
    expect(loadConfig({ FREE_ANSWER_BYTES_PER_SECOND: ' ' }).freeAnswerBytesPerSecond).to.equal(262_144);
    for (const bad of ['0', '1023', '1.5', 'lots', '2000000000']) {
      expect(() => loadConfig({ FREE_ANSWER_BYTES_PER_SECOND: bad }), bad).to.throw(ConfigError, /FREE_ANSWER_BYTES_PER_SECOND: must be a whole number of bytes per second/);
    }
  });

  it('holds clients to the limits of src/app/http/client-limits.ts, each settable, and refuses headers given longer than the whole request', () => {
    expect(loadConfig({}).clientLimits).to.deep.equal({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 60_000,
      keepAliveTimeoutMs: 5_000,
      bodyTimeoutMs: 10_000,
      bodyMinBytesPerSecond: 1024,
      maxConnectionsPerClient: 128,
      maxRequestsInFlightPerClient: 64,
    });
    const set = loadConfig({ HTTP_BODY_MIN_RATE: '512', MAX_CONNECTIONS_PER_CLIENT: '8', MAX_REQUESTS_IN_FLIGHT_PER_CLIENT: ' ' }).clientLimits;
    expect(set).to.include({ bodyMinBytesPerSecond: 512, maxConnectionsPerClient: 8, maxRequestsInFlightPerClient: 64 });
    for (const bad of ['0', '-1', '1.5', 'lots']) expect(() => loadConfig({ MAX_CONNECTIONS_PER_CLIENT: bad })).to.throw(ConfigError, /MAX_CONNECTIONS_PER_CLIENT/);
    expect(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '70000' })).to.throw(ConfigError, /HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS/);
  });

  it('takes payments through Stripe when STRIPE_SECRET_KEY is set, with STRIPE_API_BASE and STRIPE_WEBHOOK_SECRET; embedded otherwise', () => {
    expect(loadConfig({}).stripe).to.equal(null);
    // What `npm run engines` prints (the mock's address) leaves the service embedded.
    expect(loadConfig({ STRIPE_API_BASE: 'http://127.0.0.1:32111' }).stripe).to.equal(null);
    expect(loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc123', STRIPE_API_BASE: 'http://127.0.0.1:32111', STRIPE_WEBHOOK_SECRET: 'whsec_xyz' }).stripe).to.deep.equal({ secretKey: 'sk_test_abc123', apiBase: 'http://127.0.0.1:32111', webhookSecret: 'whsec_xyz' });
    expect(loadConfig({ STRIPE_SECRET_KEY: 'rk_live_abc123' }).stripe).to.deep.equal({ secretKey: 'rk_live_abc123', apiBase: null, webhookSecret: null });
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'pk_test_abc123' })).to.throw(ConfigError, /STRIPE_SECRET_KEY: must be a Stripe secret/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc123', STRIPE_WEBHOOK_SECRET: 'abc' })).to.throw(ConfigError, /STRIPE_WEBHOOK_SECRET/);
  });

  describe('SCORES_NOW', () => {
    it('takes an ISO 8601 instant with a zone, as that instant', () => {
      for (const [text, iso] of [
        ['2024-03-15T12:00:00Z', '2024-03-15T12:00:00.000Z'],
        ['2024-03-15T12:00:00.250Z', '2024-03-15T12:00:00.250Z'],
        ['2024-03-15T12:00+01:00', '2024-03-15T11:00:00.000Z'],
        ['2024-02-29T23:59:59-05:00', '2024-03-01T04:59:59.000Z'],
      ]) {
        expect(loadConfig({ SCORES_NOW: text }).now?.toISOString(), text).to.equal(iso);
      }
      expect(loadConfig({}).now).to.equal(null);
    });

    it('refuses what Date.parse would read into some other instant, naming the variable', () => {
      // "1" was 2001-01-01, "2025-02-30" rolled over to March 2, a time without a zone depended on the host's TZ.
      for (const text of ['1', '2025', 'March 5, 2025', '2025-03-05', '2025-03-05T10:00:00', '2025-02-30T00:00:00Z', '2023-02-29T12:00:00Z', '2024-13-01T00:00:00Z', '2024-03-15T24:00:00Z', 'garbage']) {
        expect(() => loadConfig({ SCORES_NOW: text }), text).to.throw(ConfigError, /SCORES_NOW: must be an ISO 8601 instant with a zone/);
      }
    });
  });

  describe('POSTGRES_URL', () => {
    it('puts the event log in PostgreSQL when it is a postgres:// URL, and refuses anything else', () => {
      expect(loadConfig({ POSTGRES_URL: ' postgres://scores@db:5432/scores ' }).postgresUrl).to.equal('postgres://scores@db:5432/scores');
      expect(loadConfig({ POSTGRES_URL: 'postgresql://localhost/x' }).postgresUrl).to.equal('postgresql://localhost/x');
      expect(loadConfig({ POSTGRES_URL: '' }).postgresUrl).to.equal(null);
      expect(() => loadConfig({ POSTGRES_URL: 'localhost:5432' })).to.throw(ConfigError, /POSTGRES_URL: must be a postgres:\/\/ URL/);
    });

    it('refuses it beside ESDB_URL: the log is in one place', () => {
      expect(() => loadConfig({ POSTGRES_URL: 'postgres://localhost/x', ESDB_URL: 'esdb://localhost:2113' })).to.throw(ConfigError, /ESDB_URL, POSTGRES_URL/);
    });
  });
});
