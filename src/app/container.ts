import { join } from 'node:path';
import type { Logger } from 'pino';
import { createLogger } from './logger.js';
import { narrowTree } from '../core/private-files.js';
import { allProjections } from '../../projections/index.js';
import { LedgerService } from '../../commands/ledger/ledger.handler.js';
import { FileOutboxMailer } from '../../infra/mail/file-outbox.js';
import { SmtpMailer } from '../../infra/mail/smtp.js';
import { HttpsWebhookSender } from '../../infra/webhooks/https-sender.js';
import type { Billing } from '../core/billing.port.js';
import { EmbeddedBilling } from '../../infra/billing/embedded-billing.js';
import { ExportDirectory } from '../../infra/files/export-directory.js';
import type { ExportFiles } from '../core/export-files.port.js';
import type { WebhookSender } from '../core/webhook-sender.port.js';
import type { Mailer, MailMessage } from '../core/mail.port.js';
import { fixedClock, systemClock, type Clock } from '../core/clock.js';
import { randomIds, type Ids } from '../core/ids.port.js';
import type { EventBus } from '../core/event-bus.port.js';
import type { EventStore } from '../core/event-store.port.js';
import { ProjectorRunner } from '../core/projector-runner.js';
import { CachedReadStore } from '../core/cached-read-store.js';
import { ReadModelMemo } from '../core/read-model-memo.js';
import { latestScores, latestScoresProjection } from '../../projections/latest-scores/latest-scores.projection.js';
import type { ReadStore } from '../core/read-store.port.js';
import { readModelsNamespace, type Config } from './config.js';
import type { Meter } from '../web/meter.port.js';
import { VISIBILITY_EVENT_TYPES, VisibilityCache } from '../../queries/shared/visibility.js';
import type { QueryContext } from '../../queries/shared/query-context.js';
import { KEY_STATUS_EVENTS, LedgerMeter } from './metering/meter.js';
import { followKeyEvents } from './metering/key-events.js';
import { FreeAnswerBytes } from './metering/free-answer-bytes.js';
import { Metrics } from './metrics/metrics.js';
import { openStores } from './open-stores.js';
import { ReadModelFollower, type ReadModelFeed } from './read-model-follower.js';
import { openLedgerKeyring, type LedgerKeyring } from '../../infra/files/ledger-keyring.js';
import { openDataKeyring, type DataKeyring } from '../../infra/files/data-keyring.js';
import type { SecretBox } from '../core/secret-box.port.js';
import type { AccountKeyStore, PersonalData } from '../core/personal-data.port.js';
import { AccountKeyVault } from '../core/account-key-vault.js';
import { ACCOUNT_KEYS_FILE, SqliteAccountKeys } from '../../infra/sqlite/account-keys.js';
import { GenerationLog, LiveReadModels } from '../core/read-model-generations.js';
import { generationsStreamOf } from '../core/read-model-generations.decider.js';
import { RequestLog } from '../core/request-log.js';
import type { RequestLogStore } from '../core/request-log.port.js';
import { REQUEST_LOG_FILE, SqliteRequestLog } from '../../infra/sqlite/request-log.js';
import { RequestRecorder } from './metering/request-recorder.js';

/** Everything a process of the service needs, wired once (the composition root's output). */
export interface Services {
  config: Config;
  /** The data clock: what is published, visible, billed and decided now (`SCORES_NOW` pins it). */
  clock: Clock;
  /**
   * Transport time (src/core/clock.ts): webhook timestamps and retry schedules. The wall clock
   * even when `SCORES_NOW` pins the data clock; a test that injects `clock` gets it here too.
   */
  transportClock: Clock;
  /** New ids (accounts, keys, packs, requests), as the clock gives time. */
  ids: Ids;
  log: Logger;
  events: EventStore;
  reads: ReadStore;
  bus: EventBus;
  /**
   * The read store under any generation (the replay's and the read models' projectors' view) and
   * the stream saying which generation of each read model is live (docs/scaling.md).
   */
  readModels: { base: ReadStore; generations: GenerationLog };
  /** Projects the read models (started by the `projections` job, or by a command that needs them). */
  runner: ProjectorRunner;
  /**
   * The read models' progress as this process sees it: `runner` where the process projects, a
   * ReadModelFollower where another one does (OpenOptions.readModels). Caches and read-your-writes wait on it.
   */
  feed: ReadModelFeed;
  /** Usage-alert emails: SMTP when configured, else files in `<dataDir>/outbox`. */
  mailer: Mailer;
  /** Webhook deliveries: HTTPS to public addresses only (WEBHOOK_ALLOW_SUBNETS, WEBHOOK_CA_FILE). */
  webhookSender: WebhookSender;
  /**
   * Bulk export bundles: in PostgreSQL when POSTGRES_URL is set, else in GridFS when MONGODB_URI
   * is, so that every replica serves every bundle (docs/scaling.md); else files under `<dataDir>/exports`.
   */
  exportFiles: ExportFiles;
  /** Payments for what the account page sells and the invoices: Stripe when STRIPE_SECRET_KEY is set, else embedded (every payment succeeds). */
  billing: Billing;
  /** The key that signs ledger heads and the public keys published (docs/ledger.md, "Signed heads"). */
  keyring: LedgerKeyring;
  /** Seals secrets at rest (webhook signing secrets) under the data keys (docs/operations.md, "Secrets at rest"). */
  secrets: SecretBox;
  /** Where the data key in use came from. */
  secretsKeySource: DataKeyring['source'];
  /**
   * Personal data (addresses, webhook secrets) sealed under each account's own key, destroyed when
   * the account is forgotten (docs/ledger.md, "Forgetting an account").
   */
  personal: PersonalData;
  /** Write side of the credit ledgers: every spend decision goes through it. */
  ledger: LedgerService;
  /** Keys, charges and balances of every call, REST and MCP (key lookups cached until a key event reaches the read models, at most 5 s). */
  meter: Meter;
  /** Every call of the accounts' keys, kept 30 days (src/core/request-log.ts; docs/operations.md, "The request log"). */
  requestLog: RequestLog;
  /** Records each call in `requestLog` as it ends (REQUEST_LOG=off: none); its meter notes what each call was charged. */
  recorder: RequestRecorder;
  /** Each account's budget of free answers' bytes, REST and MCP together, in this process (FREE_ANSWER_BYTES_PER_SECOND). */
  freeAnswers: FreeAnswerBytes;
  /** What the read side is given: the query reads, the meter, visibility (memoised until scores or tickers change). */
  queries: QueryContext;
  /** The Prometheus instruments (`GET /metrics`): requests, charges, appends, projection lag. */
  metrics: Metrics;
  /** Base of absolute URLs: PUBLIC_BASE_URL, else the address the server listens on. */
  baseUrl(): string;
  setListenUrl(url: string): void;
  close(): Promise<void>;
}

export interface OpenOptions {
  clock?: Clock;
  /** Default: `clock` when one is given, else the wall clock. */
  transportClock?: Clock;
  ids?: Ids;
  log?: Logger;
  /**
   * `project` (default): this process projects the read models (`runner`). `follow`: another
   * process does (a worker's `projections` job); `feed` follows the checkpoints it commits.
   */
  readModels?: 'project' | 'follow';
  /** How often the request log's buffer is written (default 1 s; a test of the flush on stop sets it long). */
  requestLogFlushMs?: number;
}

/**
 * A data directory written with wider modes (before this release, or copied) is made owner-only
 * before anything is opened in it, and the log says so once (docs/operations.md, "The data directory").
 */
function narrowDataDir(dataDir: string, log: Logger): void {
  const changed = narrowTree(dataDir);
  if (changed.length > 0) log.warn({ data_dir: dataDir, paths: changed.length, first: changed.slice(0, 5) }, 'data directory was readable by other users: made owner-only (0600 files, 0700 folders)');
}

/** Opens the ports the configuration asks for: the embedded SQLite file unless a server URL is set. */
export async function openServices(config: Config, options: OpenOptions = {}): Promise<Services> {
  const clock = options.clock ?? (config.now ? fixedClock(config.now) : systemClock);
  const transportClock = options.transportClock ?? options.clock ?? systemClock;
  const log = options.log ?? createLogger(config.logLevel);
  const metrics = new Metrics();
  narrowDataDir(config.dataDir, log);
  const stores = await openStores(config, clock, log, metrics);
  const exportFiles = await openExportFiles(config);
  const keyring = openKeyring(config, clock);
  const dataKeys = openDataKeyring({ dataDir: config.dataDir, key: config.dataEncryptionKey, retired: config.dataEncryptionRetiredKeys, now: transportClock.now() });
  const { events, bus } = stores;
  const accountKeys = await openAccountKeys(config);
  const generations = new GenerationLog(events, transportClock, generationsStreamOf(readModelsNamespace(config)));
  // On a shared read store each read model is read in its live generation (a replay makes new ones):
  // followed by a process that follows another's projections, as of its start by one that projects.
  const live = config.readStore !== 'sqlite' ? new LiveReadModels(stores.reads, generations) : null;
  if (options.readModels === 'follow') await live?.follow(250, (err) => log.warn({ err }, 'read-model generations not read; again shortly'));
  else await live?.refresh();
  const reads = live?.reads ?? stores.reads;
  const runner = new ProjectorRunner(events, reads, allProjections(), {
    onError: (err) => log.error({ err }, 'projector failed; it follows the log again from its last checkpoint after a pause'),
  });
  const feed: ReadModelFeed =
    options.readModels === 'follow'
      ? // The data of the key events the meter enforces; a job that needs more asks (feed.wantData).
        new ReadModelFollower(events, reads, { projections: allProjections().map((p) => p.name), dataTypes: KEY_STATUS_EVENTS, onError: (err) => log.error({ err }, 'read-model follower failed; it follows the log again after a pause') })
      : runner;
  const mailer: Mailer = config.smtpUrl
    ? new SmtpMailer({ url: config.smtpUrl, from: config.mailFrom, clock })
    : new FileOutboxMailer({ dir: join(config.dataDir, 'outbox'), from: config.mailFrom, clock, onWritten: outboxConsole(config) });
  let listenUrl = `http://localhost:${config.port}`;
  const baseUrl = () => config.publicBaseUrl ?? listenUrl;
  // Queries read through a cache of the latest scores (one read per metered score call).
  const queryReads = new CachedReadStore(reads, [{ def: latestScores, eventTypes: latestScoresProjection.eventTypes }]);
  // Snapshots of the ledger states go beside the read models (a cache: `reads`, not the queries' view).
  const ledger = new LedgerService(events, clock, { snapshots: reads, onSnapshotError: (err) => log.warn({ err }, 'ledger snapshot not written') });
  const meter = new LedgerMeter(ledger, queryReads, clock, (endpoint, channel, cost) => metrics.debited(endpoint, channel, cost), stores.rates, transportClock);
  const requestLog = new RequestLog(await openRequestLog(config), { clock: transportClock, flushMs: options.requestLogFlushMs, onError: (err, what) => log.warn({ err }, what) });
  const recorder = new RequestRecorder(requestLog, config.requestLog);
  const charging = recorder.meter(meter);
  // On a shared log another process may revoke a key and project it: this one reads it from the log.
  const keyEvents = config.postgresUrl || config.esdbUrl
    ? await followKeyEvents(events, (batch) => meter.keyEventsSeen(batch), { onError: (err) => log.warn({ err }, 'key events not followed; again in 1 s') })
    : null;
  return {
    config,
    clock,
    transportClock,
    ids: options.ids ?? randomIds(),
    log,
    events,
    reads: queryReads,
    bus,
    runner,
    feed,
    mailer,
    webhookSender: new HttpsWebhookSender({ allow: config.webhookAllowSubnets, caFile: config.webhookCaFile ?? undefined }),
    exportFiles,
    billing: await openBilling(config),
    ledger,
    meter: charging,
    requestLog,
    recorder,
    freeAnswers: new FreeAnswerBytes(config.freeAnswerBytesPerSecond),
    keyring,
    secrets: dataKeys.box,
    secretsKeySource: dataKeys.source,
    personal: new AccountKeyVault(accountKeys, dataKeys.box, transportClock),
    readModels: { base: stores.reads, generations },
    queries: queryContext({ reads: queryReads, events, meter, charging, requestLog, ledger, feed, clock, baseUrl, keyring, live }),
    metrics,
    baseUrl,
    setListenUrl: (url) => {
      listenUrl = url;
    },
    async close() {
      // First: the calls answered until now are written (a graceful stop loses none).
      await requestLog.close();
      live?.stop();
      await keyEvents?.stop();
      await runner.stop();
      if (feed !== runner) await feed.stop();
      await mailer.close();
      await exportFiles.close();
      await accountKeys.close();
      await stores.close();
    },
  };
}

/**
 * The ledger's signing key. On a shared log (POSTGRES_URL, ESDB_URL) processes need not share a
 * data directory, so only LEDGER_SIGNING_KEY may sign there: every process given it signs with
 * the same key, and one without it signs nothing rather than with a key of its own.
 */
function openKeyring(config: Config, clock: Clock): LedgerKeyring {
  const sharedLog = Boolean(config.postgresUrl || config.esdbUrl);
  return openLedgerKeyring({ dataDir: config.dataDir, signingKey: config.ledgerSigningKey, retired: config.ledgerRetiredKeys, sharedLog, now: clock.now() });
}

/**
 * Said once by a process on a shared log whose data key is its data directory's: every process
 * that signs deliveries must hold the key that sealed the secrets, which a data directory of its
 * own does not give (`scores fleet up` shares one directory; separate hosts need DATA_ENCRYPTION_KEY).
 */
export function warnIfLocalDataKey(services: Services): void {
  if ((services.config.postgresUrl || services.config.esdbUrl) && services.secretsKeySource === 'file') {
    services.log.warn('DATA_ENCRYPTION_KEY is not set: on a shared log this process seals and opens webhook secrets with its data directory\'s key, so every process must share that directory or the key (docs/operations.md, "Secrets at rest")');
  }
}

/** Said once by a process that would sign (the API, the invoice issuer) when it cannot; a CLI command's stdout stays its own. */
export function warnIfUnsigned(services: Services, what: string): void {
  if (services.keyring.signer === null) {
    services.log.warn(`LEDGER_SIGNING_KEY is not set: on a shared log ${what} carry no signed ledger head (docs/operations.md, "The ledger signing key")`);
  }
}

/**
 * Where the accounts' keys live: beside a PostgreSQL log (every process shares them), else in a
 * file of the data directory apart from the store, so that a copy of the log never carries them.
 */
async function openAccountKeys(config: Config): Promise<AccountKeyStore> {
  if (config.postgresUrl) {
    const { PostgresAccountKeys } = await import('../../infra/postgresql/account-keys.js');
    return new PostgresAccountKeys(config.postgresUrl);
  }
  return new SqliteAccountKeys(join(config.dataDir, ACCOUNT_KEYS_FILE));
}

/** The Billing adapter: Stripe when a secret key is configured, the embedded billing otherwise. */
async function openBilling(config: Config): Promise<Billing> {
  if (!config.stripe) return new EmbeddedBilling();
  const { StripeBilling } = await import('../../infra/stripe/stripe-billing.js');
  return new StripeBilling(config.stripe);
}

/**
 * Where the request log lives: beside a PostgreSQL log (every replica writes and reads it), else in
 * a file of the data directory apart from the store, which backups leave out (docs/operations.md).
 */
async function openRequestLog(config: Config): Promise<RequestLogStore> {
  if (config.postgresUrl) {
    const { PostgresRequestLog } = await import('../../infra/postgresql/request-log.js');
    return new PostgresRequestLog(config.postgresUrl);
  }
  return new SqliteRequestLog(join(config.dataDir, REQUEST_LOG_FILE));
}

/**
 * Where export bundles live. PostgreSQL first: its run lock is an advisory lock the server drops
 * the moment a holder's connection dies, where GridFS's is a lease that must run out.
 */
async function openExportFiles(config: Config): Promise<ExportFiles> {
  if (config.postgresUrl) {
    const { PostgresExportFiles } = await import('../../infra/postgresql/export-files.js');
    return new PostgresExportFiles(config.postgresUrl);
  }
  if (config.mongodbUri) {
    const { GridFsExportFiles } = await import('../../infra/mongodb/export-files.js');
    return new GridFsExportFiles(config.mongodbUri, config.mongodbDb);
  }
  return new ExportDirectory(join(config.dataDir, 'exports'));
}

/**
 * What the read side is given, with its caches (visibility, memoised read models), each dropped
 * as the runner applies the events that change it, as the latest-scores cache and the meter's key
 * lookups are.
 */
function queryContext(parts: {
  reads: CachedReadStore;
  events: EventStore;
  meter: LedgerMeter;
  /** `meter` as the calls charge through it (noting each call's cost for the request log). */
  charging: Meter;
  requestLog: RequestLog;
  ledger: LedgerService;
  feed: ReadModelFeed;
  clock: Clock;
  baseUrl: () => string;
  keyring: LedgerKeyring;
  live: LiveReadModels | null;
}): QueryContext {
  const { reads, events, meter, charging, requestLog, ledger, feed, clock, baseUrl, keyring } = parts;
  const visibility = new VisibilityCache(reads);
  const memo = new ReadModelMemo();
  // A replay's generation may hold documents of a new shape: nothing cached from the old one is kept.
  parts.live?.onSwitch(() => {
    reads.clear();
    memo.clear();
    meter.forgetKeys();
    visibility.invalidate();
  });
  feed.onBatch((batch) => {
    reads.invalidate(batch);
    memo.invalidate(batch);
    // A key event in the read models (issue, rotation, revocation) drops every cached lookup.
    meter.keyEventsSeen(batch);
    if (batch.some((e) => VISIBILITY_EVENT_TYPES.has(e.type))) visibility.invalidate();
  });
  return {
    reads,
    memo,
    events,
    meter: charging,
    requests: requestLog,
    visibility: (entitlements) => visibility.get(entitlements, clock.now()),
    baseUrl,
    signHead: (head) => keyring.signer?.sign({ ...head, at: clock.now().toISOString() }) ?? null,
    async ledgerCaughtUp(accountId) {
      // The stream's tail first: the position of a debit another replica appended a moment ago.
      await ledger.state(accountId, { fresh: true });
      const position = ledger.position(accountId);
      if (position) await Promise.race([feed.waitFor(position), new Promise((r) => setTimeout(r, 2000))]);
    },
  };
}

/**
 * Without SMTP, each mail is a file: the console (stderr, beside the JSON log on stdout) says
 * where, and on a demo deployment prints the sign-in link itself. Quiet when LOG_LEVEL is silent.
 */
function outboxConsole(config: Config): ((file: string, message: MailMessage) => void) | undefined {
  if (config.logLevel === 'silent') return undefined;
  return (file, message) => {
    const link = config.demo ? /\bhttps?:\/\/\S+\/account\/sign-in\/\S+/.exec(message.text)?.[0] : undefined;
    // Not the address: a log line outlives a forgotten account (docs/ledger.md, "Forgetting an account").
    process.stderr.write(`Mail written to ${file} (no SMTP_URL set)${link ? `\n  sign-in link: ${link}` : ''}\n`);
  };
}
