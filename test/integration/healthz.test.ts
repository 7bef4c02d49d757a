import { expect } from 'chai';
import { rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { openSqlite } from '../../infra/sqlite/database.js';
import { SqliteEventStore } from '../../infra/sqlite/event-store.js';
import { systemClock } from '../../src/core/clock.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { createApp } from '../../src/app/http/app.js';
import { until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

describe('GET /healthz while the read models cannot follow the log', function () {
  this.timeout(30_000);
  const dir = tempDir('scores-healthz-');
  let services: Services;
  let server: Server;
  const health = async () => {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`);
    return { status: res.status, body: (await res.json()) as { status: string; projections: { state: string; error: string | null } } };
  };

  before(async () => {
    services = await openServices(loadConfig(testEnv(dir, '2019-01-31T23:00:00Z')));
    await services.runner.start();
    server = createApp(services).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
  });

  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await services.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 200 ok while they follow it', async () => {
    const { status, body } = await health();
    expect(status).to.equal(200);
    expect(body.status).to.equal('ok');
    expect(body.projections).to.include({ state: 'live', error: null });
  });

  it('answers 503 degraded with the error once a batch fails (here: an event no reader can decode)', async () => {
    // Another process appends a day of closes whose table has a column too short.
    const db = openSqlite(join(dir, 'scores.sqlite'));
    const other = new SqliteEventStore(db, systemClock, { writer: 'inline' });
    await other.append('prices-2019-01-31', [{ type: 'ClosePricesRecorded', data: { date: '2019-01-31', table: { ticker: ['AAPL', 'MSFT'], close: [1] } } }]);
    await other.close();
    db.close();
    await until(async () => (await health()).status === 503, 10_000, 100);
    const { body } = await health();
    expect(body.status).to.equal('degraded');
    expect(body.projections.state).to.equal('retrying');
    expect(body.projections.error).to.match(/ClosePricesRecorded: malformed table/);
  });
});
