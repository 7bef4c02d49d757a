import { rmSync } from 'node:fs';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices } from '../../src/app/container.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, median, report } from './stats.js';

/**
 * Durable debits per second: concurrent calls on many accounts (group commit: one transaction
 * and one fsync for every debit that arrives meanwhile) against the same debits awaited one by
 * one (one commit each), in the same run. Every debit is durable before its promise resolves.
 */
export async function benchDebits(runs: number): Promise<void> {
  const grouped: number[] = [];
  const single: number[] = [];
  for (let run = 0; run < runs; run++) {
    const dir = tempDir('scores-bench-debit-');
    const services = await openServices(loadConfig(testEnv(dir, '2024-03-15T12:00:00Z', { SCORES_DEMO: 'off' })));
    try {
      const accounts = await Promise.all(Array.from({ length: 50 }, () => createAccountWithKey(services, { tier: 'quant' })));
      let n = 0;
      const debit = (account: string) =>
        services.ledger.debit(account, { request_id: `r${n++}`, endpoint: 'scores', channel: 'rest', cost: 2 });
      const t0 = performance.now();
      const inFlight = 200;
      const total = 5000;
      let issued = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (issued < total) {
            issued++;
            await debit(accounts[issued % accounts.length]!.account_id);
          }
        }),
      );
      grouped.push(total / ((performance.now() - t0) / 1000));
      const t1 = performance.now();
      const sequential = 300;
      for (let i = 0; i < sequential; i++) await debit(accounts[i % accounts.length]!.account_id);
      single.push(sequential / ((performance.now() - t1) / 1000));
    } finally {
      await services.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const g = median(grouped);
  const s = median(single);
  report(`durable debits/s, 200 concurrent (median of ${runs})`, `${fmt(g, 0)}/s`, '(group commit)', true);
  report(`durable debits/s, one at a time (median of ${runs})`, `${fmt(s, 0)}/s`, '(baseline, same run)', true);
  report('group commit speed-up', `${fmt(g / s, 1)}x`, '> 1x', g > s);
}
