import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { NewEvent } from '../../core/event-store.port.js';
import { RequestHistogram, type Observer } from './request-histogram.js';

/** The 429 codes counted from the start (at 0), so that a rate over them exists before the first refusal. */
const TOO_MANY_CODES = ['rate_limited', 'credits_exhausted'];

/** Seconds: an API call answers in milliseconds; a page, an export file or a slow store in more. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds: an append is a group commit with an fsync on the embedded store, a round trip on a server. */
const APPEND_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

type Incrementer = { inc(value?: number): void };

/**
 * The service's Prometheus instruments, in one registry per Services (a test process may run
 * several servers; each scrape shows its own). `GET /metrics` serves it (src/app/http/metrics.routes.ts);
 * docs/operations.md lists the metrics. The hot path (each request, each charge) goes through
 * label children cached by their values, so that it does not hash a label object every time.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new RequestHistogram(
    'scores_http_request_duration_seconds',
    'HTTP requests by method, route pattern (never the raw URL; "(none)" when no route matched) and status, by duration',
    HTTP_BUCKETS,
    this.registry,
  );

  readonly creditsDebited = new Counter({
    name: 'scores_credits_debited_total',
    help: 'Credits debited from the accounts\' ledgers by metered calls, by rate-card endpoint and channel (rest, mcp)',
    labelNames: ['endpoint', 'channel'] as const,
    registers: [this.registry],
  });

  readonly tooManyRequests = new Counter({
    name: 'scores_http_too_many_requests_total',
    help: 'HTTP 429 problem responses by problem code (rate_limited, credits_exhausted)',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  readonly projectionLagEvents = new Gauge({
    name: 'scores_projection_lag_events',
    help: 'Events in the log after the projection\'s checkpoint (0: caught up), as of the scrape',
    labelNames: ['projection'] as const,
    registers: [this.registry],
  });

  readonly projectionLagSeconds = new Gauge({
    name: 'scores_projection_lag_seconds',
    help: 'How long the oldest event the projection has not applied has been in the log (0: caught up), as of the scrape',
    labelNames: ['projection'] as const,
    registers: [this.registry],
  });

  readonly appendDuration = new Histogram({
    name: 'scores_event_store_append_seconds',
    help: 'Event-store appends by operation (append, append_many) and outcome (ok, conflict: the expected revision did not hold, error), by duration',
    labelNames: ['operation', 'outcome'] as const,
    buckets: APPEND_BUCKETS,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'scores_webhook_deliveries_total',
    help: 'Webhook delivery attempts made by this process, by kind (live, test) and outcome (delivered, failed)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly exportRuns = new Counter({
    name: 'scores_export_runs_total',
    help: 'Bulk export runs recorded by this process: started, completed, abandoned (a run whose process died, recorded by the next run)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly durations = new Map<string, Observer>();
  private readonly debits = new Map<string, Incrementer>();
  private processMetrics = false;

  constructor() {
    for (const code of TOO_MANY_CODES) this.tooManyRequests.inc({ code }, 0);
    for (const kind of ['live', 'test']) for (const outcome of ['delivered', 'failed']) this.webhookDeliveries.inc({ kind, outcome }, 0);
    for (const outcome of ['started', 'completed', 'abandoned']) this.exportRuns.inc({ outcome }, 0);
  }

  /** Node's process metrics (CPU, memory, event-loop delay, GC): for a serving process, not a CLI command. */
  collectProcessMetrics(): void {
    if (this.processMetrics) return;
    this.processMetrics = true;
    collectDefaultMetrics({ register: this.registry });
  }

  /** One HTTP request answered (`seconds` from its arrival). */
  request(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let child = this.durations.get(key);
    if (!child) this.durations.set(key, (child = this.httpDuration.labels({ method, route, status: String(status) })));
    child.observe(seconds);
  }

  /** A metered call's charge, once the ledger took it. */
  debited(endpoint: string, channel: string, cost: number): void {
    const key = `${endpoint} ${channel}`;
    let child = this.debits.get(key);
    if (!child) this.debits.set(key, (child = this.creditsDebited.labels(endpoint, channel)));
    child.inc(cost);
  }

  /** What the events a process appended say about its webhook deliveries and export runs. */
  appended(events: readonly NewEvent[]): void {
    for (const e of events) {
      if (e.type === 'WebhookDeliveryAttempted') {
        const d = e.data as { kind?: string; ok?: boolean };
        this.webhookDeliveries.inc({ kind: d.kind === 'test' ? 'test' : 'live', outcome: d.ok ? 'delivered' : 'failed' });
      } else if (e.type === 'ExportStarted') this.exportRuns.inc({ outcome: 'started' });
      else if (e.type === 'ExportCompleted') this.exportRuns.inc({ outcome: 'completed' });
      else if (e.type === 'ExportAbandoned') this.exportRuns.inc({ outcome: 'abandoned' });
    }
  }
}
