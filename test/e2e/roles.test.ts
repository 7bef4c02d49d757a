import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { runCli } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';

const NOW = '2019-03-29T12:00:00Z';

/** The refusals of the split roles on the embedded store; the roles on the engines: test/fleet/roles-engines.test.ts. */
describe('Process roles: scores worker and scores serve --role api', function () {
  this.timeout(600_000);

  it('refuses --role api and scores worker on the embedded store, and unknown job names (exit 2, listing the jobs)', async () => {
    const dir = tempDir('scores-roles-');
    try {
      const env = testEnv(dir, NOW);
      const api = await runCli(['serve', '--role', 'api'], env);
      expect(api.code).to.equal(1);
      // Neither the log nor the read models on a server: both named (src/app/roles.ts).
      expect(api.stderr).to.contain('set POSTGRES_URL (or ESDB_URL) for the event log and POSTGRES_URL (or MONGODB_URI) for the read models');
      const worker = await runCli(['worker'], env);
      expect(worker.code).to.equal(1);
      expect(worker.stderr).to.contain('scores worker');
      expect(worker.stderr).to.contain('POSTGRES_URL (or MONGODB_URI) for the read models');
      const unknown = await runCli(['worker', '--jobs', 'projections,mailer'], env);
      expect(unknown.code).to.equal(2);
      expect(unknown.stderr).to.contain('unknown job mailer; the jobs are: projections, publisher, alerts, webhooks, ingest, invoices, exports');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
