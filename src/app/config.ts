import { resolve } from 'node:path';
import { z } from 'zod';
import { readInstant } from '../domain/instants.js';
import { parseAllowSubnets, type AllowSubnets } from '../domain/webhooks/address-policy.js';
import { readCaFile } from '../../infra/webhooks/https-sender.js';
import { parseSchedule } from '../../commands/export-bundles/export-schedule.reactor.js';
import { parseTrustProxy, type TrustProxy } from './http/client-address.js';
import { CLIENT_LIMIT_DEFAULTS, type ClientLimits } from './http/client-limits.js';
import { STORE_TIMEOUT_MS } from './metering/shared-buckets.js';
import { FREE_ANSWER_BYTES_DEFAULT } from './metering/free-answer-bytes.js';
import { parseRetiredKeys, parseSigningKey } from '../../infra/files/ledger-keyring.js';
import { parseDataKey, parseRetiredDataKeys } from '../../infra/files/data-keyring.js';
import type { DataKey } from '../core/aes-gcm-secret-box.js';
import type { KeyObject } from 'node:crypto';
import type { LedgerPublicKey } from '../domain/ledger/ledger-head.js';

const optionalString = z
  .string()
  .optional()
  .transform((s) => (s && s.trim() !== '' ? s.trim() : undefined));

/**
 * `SCORES_NOW`: an ISO 8601 instant with a zone, read by the kernel's one parser (the `since` and
 * `as_known_at` query parameters use it too). `Date.parse` alone takes "1" (2001-01-01), "March 5,
 * 2025", a date without a time, a time without a zone (read in the host's zone) and 2025-02-30
 * (rolled over to March 2).
 */
const instant = z.string().transform((text, ctx) => {
  const reading = readInstant(text);
  if (reading.ok) return reading.iso;
  ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be ${reading.reason}` });
  return z.NEVER;
});

/** `parse(text)` of a set variable (undefined when unset), or a validation issue with its message. */
function parsedOrIssue<T>(text: string | undefined, parse: (text: string) => T, ctx: z.RefinementCtx): T | undefined {
  if (text === undefined) return undefined;
  try {
    return parse(text);
  } catch (err) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
    return z.NEVER;
  }
}

/** An empty or blank variable counts as unset (`PORT=` is the default port, not port 0). */
const unsetIfBlank = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

/** A whole number of at least 1, `fallback` when unset. */
const positiveInt = (fallback: number) => z.preprocess(unsetIfBlank, z.coerce.number().int().min(1).default(fallback));

/** Every environment variable the service reads (the README's configuration table lists them). */
const envSchema = z.object({
  PORT: z.preprocess(unsetIfBlank, z.coerce.number().int().min(0).max(65535).default(8080)),
  HOST: z.preprocess(unsetIfBlank, z.string().default('0.0.0.0')),
  PUBLIC_BASE_URL: optionalString.pipe(z.string().url().optional()),
  SCORES_DATA_DIR: z.preprocess(unsetIfBlank, z.string().default('./data')),
  SCORES_NOW: optionalString.pipe(instant.optional()),
  SCORES_DEMO: z.preprocess(unsetIfBlank, z.enum(['on', 'off']).default('on')),
  SCORES_LOG_DEBITS: z.preprocess(unsetIfBlank, z.enum(['records', 'events']).default('records')),
  SCORES_DEMO_SEED: z.preprocess(unsetIfBlank, z.coerce.number().int().default(20190102)),
  LOG_LEVEL: z.preprocess(unsetIfBlank, z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  ESDB_URL: optionalString,
  POSTGRES_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL (postgres://user:password@host:5432/database)')
      .optional(),
  ),
  RATE_LIMIT_STORE: z.preprocess(unsetIfBlank, z.enum(['postgres', 'memory']).optional()),
  RATE_LIMIT_STORE_TIMEOUT_MS: z.preprocess(unsetIfBlank, z.coerce.number().int().min(1).max(60_000).default(STORE_TIMEOUT_MS)),
  READ_STORE: z.preprocess(unsetIfBlank, z.enum(['sqlite', 'postgres', 'mongodb']).optional()),
  POSTGRES_READ_URL: optionalString.pipe(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional()),
  READ_MODELS_SCHEMA: z.preprocess(
    unsetIfBlank,
    z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a PostgreSQL schema name: lower-case letters, digits and "_"').default('read_models'),
  ),
  MONGODB_URI: optionalString,
  MONGODB_DB: z.preprocess(unsetIfBlank, z.string().default('scores')),
  KAFKA_BROKERS: optionalString,
  KAFKA_TOPIC_PREFIX: optionalString.pipe(
    z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,100}$/, 'must be letters, digits, ".", "_" or "-" (at most 100): it begins Kafka topic and group names')
      .optional(),
  ),
  SMTP_URL: optionalString,
  MAIL_FROM: z.preprocess(unsetIfBlank, z.string().default('Scores API <alerts@localhost>')),
  SCORES_EXPORTS_SCHEDULE: z.preprocess(
    unsetIfBlank,
    z
      .string()
      .default('30 22 * * *')
      .superRefine((pattern, ctx) => {
        if (pattern.trim() === 'off') return;
        try {
          parseSchedule(pattern);
        } catch (err) {
          ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be a cron pattern in UTC (e.g. "30 22 * * *") or "off": ${(err as Error).message}` });
        }
      }),
  ),
  WEBHOOK_ALLOW_SUBNETS: optionalString.transform((text, ctx) => {
    try {
      return parseAllowSubnets(text ?? '');
    } catch (err) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
      return z.NEVER;
    }
  }),
  METRICS_ALLOW_SUBNETS: optionalString.transform((text, ctx) => {
    try {
      return parseAllowSubnets(text ?? '');
    } catch (err) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
      return z.NEVER;
    }
  }),
  TRUST_PROXY: optionalString.transform((text, ctx) => {
    try {
      return parseTrustProxy(text);
    } catch (err) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
      return z.NEVER;
    }
  }),
  // Parsed here, so that a bad key stops the start; the messages never repeat the value.
  LEDGER_SIGNING_KEY: optionalString.transform((text, ctx) => parsedOrIssue(text, parseSigningKey, ctx)),
  LEDGER_RETIRED_KEYS: optionalString.transform((text, ctx) => parsedOrIssue(text, parseRetiredKeys, ctx)),
  DATA_ENCRYPTION_KEY: optionalString.transform((text, ctx) => parsedOrIssue(text, parseDataKey, ctx)),
  DATA_ENCRYPTION_RETIRED_KEYS: optionalString.transform((text, ctx) => parsedOrIssue(text, parseRetiredDataKeys, ctx)),
  READY_MAX_LAG_EVENTS: z.preprocess(unsetIfBlank, z.coerce.number().int().min(0).default(10_000)),
  LITESTREAM_BIN: optionalString,
  REQUEST_LOG: z.preprocess(unsetIfBlank, z.enum(['on', 'off']).default('on')),
  FREE_ANSWER_BYTES_PER_SECOND: optionalString.transform((text, ctx) => {
    if (text === undefined) return FREE_ANSWER_BYTES_DEFAULT;
    if (text === 'off') return null;
    const n = /^\d+$/.test(text) ? Number(text) : NaN;
    if (n >= 1024 && n <= 1024 ** 3) return n;
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be a whole number of bytes per second from 1024 to 1073741824, or "off"' });
    return z.NEVER;
  }),
  HTTP_HEADERS_TIMEOUT_MS: positiveInt(CLIENT_LIMIT_DEFAULTS.headersTimeoutMs),
  HTTP_REQUEST_TIMEOUT_MS: positiveInt(CLIENT_LIMIT_DEFAULTS.requestTimeoutMs),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: positiveInt(CLIENT_LIMIT_DEFAULTS.keepAliveTimeoutMs),
  HTTP_BODY_TIMEOUT_MS: positiveInt(CLIENT_LIMIT_DEFAULTS.bodyTimeoutMs),
  HTTP_BODY_MIN_RATE: positiveInt(CLIENT_LIMIT_DEFAULTS.bodyMinBytesPerSecond),
  MAX_CONNECTIONS_PER_CLIENT: positiveInt(CLIENT_LIMIT_DEFAULTS.maxConnectionsPerClient),
  MAX_REQUESTS_IN_FLIGHT_PER_CLIENT: positiveInt(CLIENT_LIMIT_DEFAULTS.maxRequestsInFlightPerClient),
  // Stripe (infra/stripe): the secret key selects it; the values are never repeated in messages.
  STRIPE_SECRET_KEY: optionalString.pipe(z.string().regex(/^(sk|rk)_(test|live)_\S+$/, 'must be a Stripe secret or restricted key (sk_test_…, sk_live_…, rk_…)').optional()),
  STRIPE_API_BASE: optionalString.pipe(z.string().url().regex(/^https?:\/\//, 'must be an http(s) URL').optional()),
  STRIPE_WEBHOOK_SECRET: optionalString.pipe(z.string().regex(/^whsec_\S+$/, 'must be a webhook signing secret (whsec_…)').optional()),
  WEBHOOK_CA_FILE: optionalString.superRefine((path, ctx) => {
    try {
      if (path !== undefined) readCaFile(path);
    } catch (err) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
    }
  }),
});

export interface Config {
  port: number;
  host: string;
  /** Base of every absolute URL the service writes (citation_url, docs, mcp). */
  publicBaseUrl: string | null;
  dataDir: string;
  sqliteFile: string;
  now: Date | null;
  demo: boolean;
  demoSeed: number;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  esdbUrl: string | null;
  /**
   * How the log stores a call charged alone: `records` (fixed-width rows, docs/ledger.md), or
   * `events` (a generic event row, the form before records: what a version without them reads).
   */
  logDebits: 'records' | 'events';
  /** The event log in PostgreSQL (schema `scores` of that database); exclusive with `esdbUrl`. */
  postgresUrl: string | null;
  /** Where the accounts' rate-limit buckets are: shared by the replicas in PostgreSQL, or in each process. */
  rateLimitStore: 'postgres' | 'memory';
  /** How long a request waits for the shared bucket before its replica decides alone. */
  rateLimitStoreTimeoutMs: number;
  /**
   * Where the read models are: the embedded file, PostgreSQL (`postgresReadUrl`, schema
   * `readModelsSchema`) or MongoDB (`mongodbUri`, database `mongodbDb`). Default: MongoDB when
   * MONGODB_URI is set, else PostgreSQL when POSTGRES_URL is, else the embedded file.
   */
  readStore: 'sqlite' | 'postgres' | 'mongodb';
  /** The read models' PostgreSQL server: POSTGRES_READ_URL, else the log's POSTGRES_URL. */
  postgresReadUrl: string | null;
  readModelsSchema: string;
  mongodbUri: string | null;
  mongodbDb: string;
  kafkaBrokers: string[] | null;
  /** Begins every Kafka topic and consumer group name: deployments (or test runs) sharing a cluster keep apart. */
  kafkaTopicPrefix: string;
  /** SMTP server for usage-alert emails; without it they go to `<dataDir>/outbox`. */
  smtpUrl: string | null;
  mailFrom: string;
  /** When the nightly export runs: a cron pattern in UTC, or null (off). */
  exportsSchedule: string | null;
  /** Subnets webhooks may reach although the address rules forbid them (development, tests). */
  webhookAllowSubnets: AllowSubnets;
  /** Extra CAs (PEM) webhook receivers' certificates may chain to, besides node's own. */
  webhookCaFile: string | null;
  /** Subnets besides loopback that `GET /metrics` answers. */
  metricsAllowSubnets: AllowSubnets;
  /** `/readyz` answers 503 while a projection is more events than this behind the log. */
  readyMaxLagEvents: number;
  /**
   * The bytes per second of free answers a free account may move (paid tiers: that times their
   * request rate over free's), per API process; null: unbounded (src/app/metering/free-answer-bytes.ts).
   */
  freeAnswerBytesPerSecond: number | null;
  /** The proxies whose `X-Forwarded-For` names the client (src/app/http/client-address.ts); false: none. */
  trustProxy: TrustProxy;
  /** What one client may hold of the HTTP server: time to send a request, connections, requests in flight (src/app/http/client-limits.ts). */
  clientLimits: ClientLimits;
  /** `LEDGER_SIGNING_KEY`: the Ed25519 key that signs ledger heads; null: the data directory's (embedded store) or none (shared log). */
  ledgerSigningKey: KeyObject | null;
  /** `LEDGER_RETIRED_KEYS`: public keys that signed heads before a rotation, still listed. */
  ledgerRetiredKeys: LedgerPublicKey[];
  /** `DATA_ENCRYPTION_KEY`: the key that seals secrets at rest; null: the data directory's. */
  dataEncryptionKey: DataKey | null;
  /** `DATA_ENCRYPTION_RETIRED_KEYS`: keys that sealed before a rotation, still opening what they sealed. */
  dataEncryptionRetiredKeys: DataKey[];
  /** `LITESTREAM_BIN`: the Litestream `scores replicate` runs; null: where `npm run engines` installs it (src/app/backup/litestream.ts). */
  litestreamBin: string | null;
  /**
   * Payments through Stripe (`STRIPE_SECRET_KEY`, `STRIPE_API_BASE` for stripe-mock,
   * `STRIPE_WEBHOOK_SECRET` for `POST /billing/stripe/webhook`); null: the embedded billing. The
   * secret key alone selects Stripe: the other two mean nothing without it (`npm run engines`
   * prints STRIPE_API_BASE for the Stripe suite, and a shell that evaluates it stays embedded).
   */
  stripe: { secretKey: string; apiBase: string | null; webhookSecret: string | null } | null;
  /** `REQUEST_LOG`: whether the API records each call in the request log (`off`: nothing recorded; what it holds is still served). */
  requestLog: boolean;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid environment:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.ESDB_URL && e.POSTGRES_URL) throw new ConfigError('invalid environment:\n  ESDB_URL, POSTGRES_URL: the event log is in one place; set one of them');
  if (e.RATE_LIMIT_STORE === 'postgres' && !e.POSTGRES_URL) throw new ConfigError('invalid environment:\n  RATE_LIMIT_STORE: postgres needs POSTGRES_URL');
  const postgresReadUrl = e.POSTGRES_READ_URL ?? e.POSTGRES_URL ?? null;
  const readStore = e.READ_STORE ?? (e.MONGODB_URI ? 'mongodb' : postgresReadUrl ? 'postgres' : 'sqlite');
  // Node refuses a server whose headers may take longer than the whole request.
  if (e.HTTP_HEADERS_TIMEOUT_MS > e.HTTP_REQUEST_TIMEOUT_MS) throw new ConfigError('invalid environment:\n  HTTP_HEADERS_TIMEOUT_MS: must not exceed HTTP_REQUEST_TIMEOUT_MS');
  if (readStore === 'postgres' && !postgresReadUrl) throw new ConfigError('invalid environment:\n  READ_STORE: postgres needs POSTGRES_READ_URL or POSTGRES_URL');
  if (readStore === 'mongodb' && !e.MONGODB_URI) throw new ConfigError('invalid environment:\n  READ_STORE: mongodb needs MONGODB_URI');
  const dataDir = resolve(e.SCORES_DATA_DIR);
  return {
    port: e.PORT,
    host: e.HOST,
    publicBaseUrl: e.PUBLIC_BASE_URL ? e.PUBLIC_BASE_URL.replace(/\/+$/, '') : null,
    dataDir,
    sqliteFile: resolve(dataDir, 'scores.sqlite'),
    now: e.SCORES_NOW ? new Date(e.SCORES_NOW) : null,
    demo: e.SCORES_DEMO === 'on',
    demoSeed: e.SCORES_DEMO_SEED,
    logLevel: e.LOG_LEVEL,
    logDebits: e.SCORES_LOG_DEBITS,
    esdbUrl: e.ESDB_URL ?? null,
    postgresUrl: e.POSTGRES_URL ?? null,
    // Replicas on a PostgreSQL log share the limit there unless told otherwise.
    rateLimitStore: e.RATE_LIMIT_STORE ?? (e.POSTGRES_URL ? 'postgres' : 'memory'),
    rateLimitStoreTimeoutMs: e.RATE_LIMIT_STORE_TIMEOUT_MS,
    readStore,
    postgresReadUrl,
    readModelsSchema: e.READ_MODELS_SCHEMA,
    mongodbUri: e.MONGODB_URI ?? null,
    mongodbDb: e.MONGODB_DB,
    kafkaBrokers: e.KAFKA_BROKERS ? e.KAFKA_BROKERS.split(',').map((s) => s.trim()).filter(Boolean) : null,
    kafkaTopicPrefix: e.KAFKA_TOPIC_PREFIX ?? '',
    smtpUrl: e.SMTP_URL ?? null,
    mailFrom: e.MAIL_FROM,
    exportsSchedule: e.SCORES_EXPORTS_SCHEDULE.trim() === 'off' ? null : e.SCORES_EXPORTS_SCHEDULE.trim(),
    webhookAllowSubnets: e.WEBHOOK_ALLOW_SUBNETS,
    webhookCaFile: e.WEBHOOK_CA_FILE ? resolve(e.WEBHOOK_CA_FILE) : null,
    metricsAllowSubnets: e.METRICS_ALLOW_SUBNETS,
    readyMaxLagEvents: e.READY_MAX_LAG_EVENTS,
    freeAnswerBytesPerSecond: e.FREE_ANSWER_BYTES_PER_SECOND,
    trustProxy: e.TRUST_PROXY,
    clientLimits: {
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      bodyTimeoutMs: e.HTTP_BODY_TIMEOUT_MS,
      bodyMinBytesPerSecond: e.HTTP_BODY_MIN_RATE,
      maxConnectionsPerClient: e.MAX_CONNECTIONS_PER_CLIENT,
      maxRequestsInFlightPerClient: e.MAX_REQUESTS_IN_FLIGHT_PER_CLIENT,
    },
    ledgerSigningKey: e.LEDGER_SIGNING_KEY ?? null,
    ledgerRetiredKeys: e.LEDGER_RETIRED_KEYS ?? [],
    dataEncryptionKey: e.DATA_ENCRYPTION_KEY ?? null,
    dataEncryptionRetiredKeys: e.DATA_ENCRYPTION_RETIRED_KEYS ?? [],
    litestreamBin: e.LITESTREAM_BIN ? resolve(e.LITESTREAM_BIN) : null,
    stripe: e.STRIPE_SECRET_KEY ? { secretKey: e.STRIPE_SECRET_KEY, apiBase: e.STRIPE_API_BASE ?? null, webhookSecret: e.STRIPE_WEBHOOK_SECRET ?? null } : null,
    requestLog: e.REQUEST_LOG === 'on',
  };
}

/** The read models' own name in their store: what tells two deployments sharing a log apart (the generations' stream). */
export function readModelsNamespace(config: Pick<Config, 'readStore' | 'readModelsSchema' | 'mongodbDb'>): string {
  if (config.readStore === 'mongodb') return config.mongodbDb;
  return config.readStore === 'postgres' ? `pg-${config.readModelsSchema}` : 'embedded';
}
