import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { INGEST_TOPIC, startIngestConsumer } from '../../commands/ingest/ingest.reactor.js';
import { ingestRows } from '../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { InMemoryEventBus } from '../../infra/memory/event-bus.js';
import { KafkaEventBus } from '../../infra/kafka/event-bus.js';
import { loadConfig } from '../../src/app/config.js';
import { openServices, type Services } from '../../src/app/container.js';
import { seedIfEmpty } from '../../src/app/server.js';
import type { EventBus } from '../../src/core/event-bus.port.js';
import type { EventStore } from '../../src/core/event-store.port.js';
import { projectRoot } from '../../src/core/paths.js';
import { scoreStream } from '../../src/domain/scores/score.events.js';
import { runCli, until } from '../support/processes.js';
import { tempDir, testEnv } from '../support/server.js';
import { fmt, info, median } from './stats.js';

/** The demo's last three trading days before the clock: a live feed's rows land on the newest days. */
const NOW = '2026-11-20T23:30:00.000Z';
const DATES = ['2026-11-18', '2026-11-19', '2026-11-20'];

interface Row {
  ticker: string;
  date: string;
  main_street: number;
  wall_street: number;
}

/** The store, counting the score rows appended (a row ingested unchanged appends nothing; these all change). */
function counting(store: EventStore): { store: EventStore; rows: () => number } {
  let rows = 0;
  const appendMany: EventStore['appendMany'] = (appends) => {
    for (const a of appends) for (const e of a.events) rows += ((e.data as { rows?: unknown[] } | null)?.rows ?? []).length;
    return store.appendMany(appends);
  };
  return { store: new Proxy(store, { get: (t, p, r) => (p === 'appendMany' ? appendMany : (Reflect.get(t, p, r) as unknown)) }), rows: () => rows };
}

/** One row per ticker and date, each value away from what the store holds (so every row writes). */
async function changedRows(store: EventStore, tickers: string[], shift: number): Promise<Row[]> {
  const rows: Row[] = [];
  for (const date of DATES) {
    const held = new Map<string, number>();
    for (const e of await store.readStream(scoreStream(date))) for (const r of (e.data as { rows: { ticker: string; main_street: number }[] }).rows) held.set(r.ticker, r.main_street);
    for (const ticker of tickers) {
      const main = ((held.get(ticker) ?? 0) + 7 + shift) % 100;
      rows.push({ ticker, date, main_street: main, wall_street: 50 });
    }
  }
  return rows;
}

function openBus(): { bus: EventBus; name: string } {
  const brokers = process.env['KAFKA_BROKERS'];
  if (!brokers) return { bus: new InMemoryEventBus({}), name: 'in-process bus (KAFKA_BROKERS unset)' };
  // A topic of this run's own: the consumer reads it from the beginning.
  const bus = new KafkaEventBus({ brokers: brokers.split(','), clientId: 'scores-bench', prefix: `bench-${randomUUID().slice(0, 8)}.`, logLevel: 'error' });
  return { bus, name: 'Kafka topic' };
}

/** Rows per second: `rows` published one message each, then consumed by the ingest consumer. */
async function throughBus(s: Services, rows: Row[]): Promise<{ perSecond: number; name: string }> {
  const { bus, name } = openBus();
  try {
    for (let i = 0; i < rows.length; i += 500) {
      await bus.publish(INGEST_TOPIC, rows.slice(i, i + 500).map((r) => ({ key: r.ticker, value: JSON.stringify({ type: 'score', ...r }) })));
    }
    const counted = counting(s.events);
    const t0 = performance.now();
    await startIngestConsumer({ bus, store: counted.store, clock: s.clock, group: 'bench' });
    await until(() => counted.rows() >= rows.length, 600_000, 10);
    return { perSecond: rows.length / ((performance.now() - t0) / 1000), name };
  } finally {
    await bus.close();
  }
}

/** Rows per second of `scores ingest FILE` (one process, one batch), its start included. */
async function throughCli(dir: string, env: NodeJS.ProcessEnv, rows: Row[]): Promise<number> {
  const file = join(dir, 'bench-rows.csv');
  writeFileSync(file, ['ticker,date,main_street,wall_street', ...rows.map((r) => `${r.ticker},${r.date},${r.main_street},${r.wall_street}`)].join('\n'));
  const t0 = performance.now();
  const exit = await runCli(['ingest', file, '--json'], env, { built: true });
  if (exit.code !== 0) throw new Error(`scores ingest failed: ${exit.stderr}`);
  return rows.length / ((performance.now() - t0) / 1000);
}

/**
 * Ingest throughput on a store holding the full demo history beside a fresh store (the same
 * tickers listed, no scores): 520 tickers × 3 days of changed scores, one Kafka message per row
 * through the ingest consumer, then the same rows changed again as one `scores ingest` file.
 */
export async function benchIngest(runs: number): Promise<void> {
  const tickers = (JSON.parse(readFileSync(join(projectRoot(), 'commands/seed-demo/dataset/us-tickers.json'), 'utf8')) as { symbol: string }[])
    .slice(0, 520)
    .map((t) => t.symbol);
  for (const history of ['fresh', 'full'] as const) {
    const bus: number[] = [];
    const cli: number[] = [];
    let busName = '';
    for (let run = 0; run < runs; run++) {
      const dir = tempDir('scores-bench-ingest-');
      const env = testEnv(dir, NOW, history === 'fresh' ? { SCORES_DEMO: 'off' } : {});
      const s = await openServices(loadConfig(env));
      try {
        if (history === 'full') await seedIfEmpty(s, { progress: false });
        else await ingestRows(s.events, s.clock, parseIngestFile(tickers.map((t, i) => JSON.stringify({ type: 'ticker', symbol: t, company: t, sector: 'Tech', size_rank: i + 1 })).join('\n'), 'jsonl'));
        const viaBus = await throughBus(s, await changedRows(s.events, tickers, 0));
        busName = viaBus.name;
        bus.push(viaBus.perSecond);
        cli.push(await throughCli(dir, env, await changedRows(s.events, tickers, 1)));
      } finally {
        await s.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const label = history === 'full' ? 'full demo history' : 'fresh store';
    info(`ingest rows/s, ${busName}, ${label}`, `${fmt(median(bus), 0)}/s`, `(1,560 rows, a message each; median of ${runs})`);
    info(`ingest rows/s, scores ingest, ${label}`, `${fmt(median(cli), 0)}/s`, `(1,560 rows in one file, process start included)`);
  }
}
