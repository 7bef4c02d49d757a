import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { ingestRows } from '../../../commands/ingest/ingest.handler.js';
import { IngestValidationError, parseIngestFile } from '../../../commands/ingest/ingest.parser.js';
import { INGEST_KINDS, type IngestKind } from '../../../commands/ingest/ingest.schema.js';
import { usageFigures } from '../../domain/ledger/ledger.figures.js';
import type { LedgerOutcome } from '../../../commands/ledger/ledger.handler.js';
import { dropLedgerSnapshots } from '../../../commands/ledger/drop-snapshots.handler.js';
import { createAccountWithKey, issueKey, revokeKey, rotateKey, setRateLimit } from '../../../commands/manage-keys/keys.handler.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT } from '../../domain/accounts/api-keys.js';
import { auditAccount, auditAll, formatAuditReport, formatAuditSummary } from '../../../queries/audit-ledger/audit-ledger.query.js';
import { auditMonth, exportLedger, formatMonthAudit } from '../../../queries/audit-ledger/ledger-month.query.js';
import { AppError } from '../../core/errors.js';
import { projectRoot } from '../../core/paths.js';
import { TIERS, type Tier } from '../../domain/plans.js';
import { ConfigError, loadConfig } from '../config.js';
import { openServices, type Services } from '../container.js';
import { ListenError, catchUpReadModels, progressBar, seedIfEmpty, startServer } from '../server.js';
import { StoreBusyError, beginReplay } from '../store-users.js';
import type { SingleBar } from 'cli-progress';
import { runExport, type ExportProgress } from '../../../commands/export-bundles/export-run.handler.js';
import { exportDownloads, exportRuns } from '../../../projections/exports/exports.projection.js';

/** Output helpers: `--json` prints one JSON document on stdout; otherwise readable lines. */
function printer(json: boolean) {
  return (human: string, data: unknown) => {
    process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${human}\n`);
  };
}

/** Drops every read model and rebuilds it from the log (no server may run on the store meanwhile). */
async function replayAll(out: ReturnType<typeof printer>): Promise<void> {
  await withServices(async (s) => {
    const t0 = performance.now();
    let events = 0;
    const counter = s.runner.onEventsApplied((n) => (events += n));
    await s.runner.replay();
    counter();
    await s.runner.stop();
    const seconds = (performance.now() - t0) / 1000;
    out(`rebuilt read models from ${events} events in ${seconds.toFixed(1)} s`, { events, seconds });
  });
}

/**
 * The start banner, on stderr: stdout is the JSON log stream (a log shipper stores it), and a
 * demo key's value is shown only on a terminal, where a person reads it; elsewhere the banner names
 * `<SCORES_DATA_DIR>/demo-keys.json`. The demo accounts got random keys on their first start and
 * the store keeps only hashes, so a key the file no longer holds cannot be shown again.
 */
function printStartBanner(running: Awaited<ReturnType<typeof startServer>>, json: boolean): void {
  const terminal = Boolean(process.stderr.isTTY);
  const demoKeys = running.demoKeys.map(({ key, ...k }) => (terminal ? { ...k, key } : k));
  const openapi = `${running.baseUrl}/openapi.json`;
  if (json) {
    const banner = { listening: running.url, base_url: running.baseUrl, openapi, demo_key_file: running.demoKeyFile, demo_keys: demoKeys, demo_keys_unknown: running.demoKeysUnknown };
    process.stderr.write(`${JSON.stringify(banner)}\n`);
    return;
  }
  const w = (line: string) => process.stderr.write(`${line}\n`);
  w(`\nscores service listening on ${running.url}\n  base URL: ${running.baseUrl}\n  OpenAPI:  ${openapi}`);
  if (!running.demoKeyFile) return;
  w(`\ndemo API keys (one per tier; send as X-API-Key; kept in ${running.demoKeyFile}, readable by its owner only${terminal ? '' : '; shown on a terminal only'}):`);
  for (const k of running.demoKeys) w(`  ${k.tier.padEnd(10)} ${terminal ? k.key : `${k.key_id} (${k.account_id})`}`);
  for (const u of running.demoKeysUnknown) w(`  ${u.tier.padEnd(10)} not in the file, cannot be shown again (active: ${u.key_ids.join(', ') || 'none'})`);
  if (running.demoKeysUnknown.length) {
    w('  Demo keys are random and written only to that file, on their first start; the store keeps their hashes.');
    w('  A new key for an account (printed once, not added to the file):');
    w('  npx scores keys rotate <key_id>');
  }
  const example = running.demoKeys.find((k) => k.tier === 'hobbyist') ?? running.demoKeys[0];
  if (example && terminal) w(`\ntry: curl -H 'X-API-Key: ${example.key}' ${running.baseUrl}/v1/scores/AAPL`);
}

/** `--month`: a calendar month YYYY-MM. */
function parseMonth(value: string): string {
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(value)) throw new InvalidArgumentError('must be a month YYYY-MM');
  return value;
}

/** `--port`: an integer 0-65535. */
function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n > 65535) {
    throw new InvalidArgumentError('must be an integer 0-65535 (0 picks a free port)');
  }
  return n;
}

/** Opens the ports for one command; `readModels` first brings the read models up to the log. */
async function withServices<T>(fn: (s: Services) => Promise<T>, options: { readModels?: boolean } = {}): Promise<T> {
  const services = await openServices(loadConfig());
  try {
    if (options.readModels) await services.runner.start();
    return await fn(services);
  } finally {
    await services.close();
  }
}

export function buildCli(): Command {
  const program = new Command('scores')
    .description('Operate the scores service: serve, seed, replay, ingest.')
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride();

  program
    .command('serve')
    .description('Serve REST and MCP on PORT; seeds the demo into an empty store first')
    .option('--port <port>', 'override PORT (0-65535; 0 picks a free one)', parsePort)
    .action(async (opts: { port?: number; json?: boolean }) => {
      const services = await openServices(loadConfig());
      let running: Awaited<ReturnType<typeof startServer>>;
      try {
        running = await startServer(services, { port: opts.port });
      } catch (err) {
        // Nothing serves: close the stores (their threads would keep the process alive).
        await services.close().catch(() => undefined);
        throw err;
      }
      // Before the "listening" line: whoever waits for it (a supervisor, a test) may stop the
      // process at once, and the stop must be the clean one (in-flight requests, stores, run lock).
      const stop = () => {
        services.log.info('shutting down: finishing in-flight requests');
        void running.shutdown().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      services.log.info({ url: running.url, base_url: running.baseUrl, demo_key_file: running.demoKeyFile }, 'listening');
      printStartBanner(running, Boolean(opts.json));
    });

  program
    .command('seed')
    .description('Write the demo publication history up to the clock (SCORES_NOW or now); idempotent')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      await withServices(async (s) => {
        const head0 = await s.events.headPosition();
        const demo = s.config.demo;
        await seedIfEmpty(s, { progress: !opts.json && process.stdout.isTTY });
        await catchUpReadModels(s, { progress: !opts.json && process.stdout.isTTY });
        const head = await s.events.headPosition();
        out(
          demo
            ? `demo history written through ${s.clock.now().toISOString()} (log head ${head})`
            : `the demo dataset is off (SCORES_DEMO=off): nothing written (log head ${head}); read models caught up`,
          { before: head0, head, demo },
        );
      });
    });

  program
    .command('replay')
    .description('Drop every read model and rebuild it from the event log')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      const done = beginReplay(loadConfig().dataDir);
      try {
        await replayAll(out);
      } finally {
        done();
      }
    });

  program
    .command('ingest')
    .description('Ingest a CSV or JSONL file of scores or reference data (all rows or none)')
    .argument('<file>', 'path to a .csv or .jsonl file')
    .addOption(new Option('--type <kind>', 'row type when rows carry no "type" and the CSV header does not tell').choices(INGEST_KINDS))
    .addOption(new Option('--format <format>', 'file format (default: from the extension)').choices(['csv', 'jsonl']))
    .option('--json', 'machine-readable output')
    .action(async (file: string, opts: { type?: IngestKind; format?: 'csv' | 'jsonl'; json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      const format = opts.format ?? (['.jsonl', '.ndjson', '.json'].includes(extname(file).toLowerCase()) ? 'jsonl' : 'csv');
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new CliError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message}`, 'file_unreadable');
      }
      const rows = parseIngestFile(text, format, opts.type ?? null);
      await withServices(async (s) => {
        const result = await ingestRows(s.events, s.clock, rows);
        out(
          `ingested ${result.rows} rows: ${result.written} written, ${result.unchanged} unchanged (${result.events} events in ${result.streams} streams)`,
          result,
        );
      });
    });

  addKeyCommands(program);
  addAccountCommands(program);
  addLedgerCommands(program);
  addExportCommands(program);
  everyCommandTakesJson(program);
  return program;
}

/** The package's version (package.json), for `--version`. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** The commands that run (no subcommands), with their names from the program down. */
function leafCommands(command: Command, path: string[] = []): { path: string[]; command: Command }[] {
  return command.commands.flatMap((c) => (c.commands.length ? leafCommands(c, [...path, c.name()]) : [{ path: [...path, c.name()], command: c }]));
}

/**
 * Every command takes `--json` (a command that declares none gets it here, so a new command cannot
 * forget the option; test/e2e/cli-operators.test.ts runs each one with it to check it is honoured).
 */
function everyCommandTakesJson(program: Command): void {
  for (const { command } of leafCommands(program)) {
    if (!command.options.some((o) => o.long === '--json')) command.option('--json', 'machine-readable output');
  }
}

function addExportCommands(program: Command): void {
  const exports = program.command('exports').description('Bulk export bundles (the Backtest Pack): run one, list them, see downloads');
  exports
    .command('run')
    .description('Build a bundle now from the read models (beside a running server too); a progress bar on a terminal')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      await withServices(
        async (s) => {
          const bar = new ExportProgressBar(!opts.json && process.stdout.isTTY);
          let result;
          try {
            result = await runExport(exportDeps(s), { trigger: 'cli', onProgress: (p) => bar.update(p) });
          } finally {
            bar.stop();
          }
          if (result.status !== 'completed') throw new CliError('another export run holds the lock (a server\'s nightly run or another `scores exports run`); try again when it has finished', 'busy');
          out(
            `bundle ${result.run_id} written in ${result.seconds.toFixed(1)} s\n` +
              result.files.map((f) => `  ${f.name.padEnd(26)} ${String(f.row_count).padStart(9)} rows  ${String(f.bytes).padStart(10)} bytes  sha256 ${f.sha256}`).join('\n') +
              (result.deleted.length ? `\n  older bundles deleted: ${result.deleted.join(', ')}` : ''),
            result,
          );
        },
        { readModels: true },
      );
    });
  exports
    .command('list')
    .description('The bundles kept and the latest one listed by GET /v1/bulk/exports')
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      await withServices(
        async (s) => {
          const runs = (await s.reads.find(exportRuns, {}, { sort: [['seq', -1]], limit: 20 })).items;
          printer(Boolean(opts.json))(
            runs.length
              ? runs.map((r) => `${r.run_id}  ${r.status.padEnd(9)} started ${r.started_at} (${r.trigger})${r.files.map((f) => `\n  ${f.name.padEnd(26)} ${String(f.row_count).padStart(9)} rows  sha256 ${f.sha256}`).join('')}`).join('\n')
              : 'no export run yet',
            { runs },
          );
        },
        { readModels: true },
      );
    });
  exports
    .command('downloads')
    .description('Recorded downloads of export files, newest first (free of credits, so not in the credit ledger)')
    .option('--account <id>', 'only this account\'s')
    .option('--limit <n>', 'at most this many (default 50)', (v) => Number(v), 50)
    .option('--json', 'machine-readable output')
    .action(async (opts: { account?: string; limit: number; json?: boolean }) => {
      if (!Number.isSafeInteger(opts.limit) || opts.limit < 1) throw new CliError('--limit must be a positive integer');
      await withServices(
        async (s) => {
          const page = await s.reads.find(exportDownloads, opts.account ? { account_id: opts.account } : {}, { sort: [['at', -1]], limit: opts.limit });
          printer(Boolean(opts.json))(
            page.items.length
              ? page.items
                  .map((d) => `${d.at}  ${d.account_id}  ${d.run_id}/${d.name}  ${d.status} ${d.range ?? 'whole file'}  ${d.bytes_sent} bytes${d.complete ? '' : ' (interrupted)'}  ${d.request_id}`)
                  .join('\n')
              : 'no download recorded',
            { downloads: page.items },
          );
        },
        { readModels: true },
      );
    });
}

const exportDeps = (s: Services) => ({ events: s.events, reads: s.reads, files: s.exportFiles, clock: s.clock, ids: s.ids });

/** One bar per file of the run, on a terminal. */
class ExportProgressBar {
  private bar: SingleBar | null = null;
  private name = '';

  constructor(private readonly enabled: boolean) {}

  update(p: ExportProgress): void {
    if (p.name !== this.name) {
      this.bar?.stop();
      this.name = p.name;
      this.bar = progressBar(p.name.padEnd(26), this.enabled);
      this.bar?.start(Math.max(p.total, 1), 0);
    }
    this.bar?.update(Math.min(p.done, Math.max(p.total, 1)));
  }

  stop(): void {
    this.bar?.stop();
  }
}

const tierOption = () => new Option('--tier <tier>', 'plan tier').choices(TIERS);
const accountOption = () => new Option('--account <id>', 'account id (from `keys create`)').makeOptionMandatory();

/** Runs one ledger operation for an account and prints its usage figures afterwards. */
async function ledgerCommand(
  accountId: string,
  run: (s: Services) => Promise<LedgerOutcome>,
  json: boolean,
  what: string,
  /** Why a command that records nothing changed nothing (e.g. a pack id already in the ledger). */
  unchanged?: string,
): Promise<void> {
  await withServices(async (s) => {
    const outcome = await run(s);
    const figures = usageFigures(outcome.state, s.clock.now());
    if (unchanged !== undefined && outcome.events.length === 0) {
      printer(json)(`${unchanged} (account ${accountId}): no change`, { account_id: accountId, events: [], usage: figures, unchanged });
      return;
    }
    printer(json)(
      `${what} (account ${accountId}): ${outcome.events.length ? outcome.events.map((e) => e.type).join(', ') : 'no change'}\n` +
        `  tier ${figures.tier}${figures.pro_member ? ' + Pro' : ''}, allowance ${figures.monthly_allowance ?? 'unmetered'}, used ${figures.used_this_month}, prepaid ${figures.prepaid_credits}, overage ${figures.allow_overage ? 'on' : 'off'}`,
      { account_id: accountId, events: outcome.events.map((e) => e.type), usage: figures },
    );
  });
}

/** `scores keys create|revoke|rotate`. */
function addKeyCommands(program: Command): void {
  const keys = program.command('keys').description('API keys: create (with a new account, or on one), revoke, rotate');
  keys
    .command('create')
    .description(`Create an account on a tier and print its first API key (shown once), or with --account another key of that account (at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active)`)
    .addOption(tierOption())
    .option('--account <id>', 'add the key to this existing account instead (it keeps its plan)')
    .option('--pro', 'the account holds a consumer Pro membership (overlay)')
    .option('--email <email>', 'where usage alerts are sent')
    .option('--json', 'machine-readable output (the default for this command)')
    .action(async (opts: { tier?: Tier; account?: string; pro?: boolean; email?: string }) => {
      if (opts.email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(opts.email)) throw new CliError(`--email ${opts.email} is not an email address`);
      if ((opts.account === undefined) === (opts.tier === undefined)) throw new CliError('give --tier for a new account, or --account for another key of an existing one');
      if (opts.account !== undefined && (opts.pro || opts.email !== undefined)) throw new CliError('--pro and --email describe a new account: give them with --tier');
      const { account, tier } = opts;
      await withServices(async (s) => {
        const issued = account !== undefined ? await issueKey(s, account) : await createAccountWithKey(s, { tier: tier!, pro: Boolean(opts.pro), email: opts.email ?? null });
        // Always JSON with `account_id` and `key` (a script stores the key, shown once).
        printer(true)('', issued);
      });
    });
  keys
    .command('revoke')
    .description('Revoke a key at once, active or in its grace period (403 key_forbidden from then on); ends the grace of the key it replaced')
    .argument('<key_id>', 'the key id printed by `keys create`')
    .option('--json', 'machine-readable output')
    .action(async (keyId: string, opts: { json?: boolean }) => {
      await withServices(async (s) => {
        const r = await revokeKey(s, keyId);
        printer(Boolean(opts.json))(r.revoked ? `key ${keyId} revoked` : `key ${keyId} was already revoked`, r);
      }, { readModels: true });
    });
  keys
    .command('rotate')
    .description('Issue a replacement key; the old one keeps working for the grace period (a key still in grace before it stops at once)')
    .argument('<key_id>', 'the key id to replace')
    .option('--grace <seconds>', 'how long the old key keeps working (0 = stops at once)', (v) => Number(v), 0)
    .option('--json', 'machine-readable output')
    .action(async (keyId: string, opts: { grace: number; json?: boolean }) => {
      await withServices(async (s) => {
        const r = await rotateKey(s, keyId, opts.grace);
        printer(Boolean(opts.json))(
          `new key id ${r.key_id}\nAPI key (shown once): ${r.key}\nold key ${keyId} works until ${r.old_key_valid_until}`,
          r,
        );
      }, { readModels: true });
    });
}

/** What an account buys and may do: `plan`, `rate-limit`, `packs` (Pro and overage are switches, `addSwitch`). */
function addAccountCommands(program: Command): void {
  const plan = program.command('plan').description('Change or cancel an account\'s plan');
  plan
    .command('set')
    .description('Move the account to a tier (a higher allowance applies at once)')
    .addOption(accountOption())
    .addOption(tierOption().makeOptionMandatory())
    .option('--json', 'machine-readable output')
    .action((opts: { account: string; tier: Tier; json?: boolean }) =>
      ledgerCommand(opts.account, (s) => s.ledger.changePlan(opts.account, opts.tier), Boolean(opts.json), `plan set to ${opts.tier}`),
    );
  plan
    .command('cancel')
    .description('Back to free at the end of the current month; the key keeps working')
    .addOption(accountOption())
    .option('--json', 'machine-readable output')
    .action((opts: { account: string; json?: boolean }) =>
      ledgerCommand(opts.account, (s) => s.ledger.cancelPlan(opts.account), Boolean(opts.json), 'plan cancelled'),
    );

  addSwitch(program, 'pro', 'Switch the Pro-member overlay on or off', 'Pro', (s, account, on) => s.ledger.setPro(account, on));
  addSwitch(program, 'overage', 'Switch between hard stop (off) and overage billing (on)', 'overage', (s, account, on) =>
    s.ledger.switchOverage(account, on),
  );

  program
    .command('rate-limit')
    .description("An account's request rate (all its keys, REST and MCP together): an override of its plan's")
    .command('set')
    .description('Set the rate: N requests per second per account (bursts of twice that), unlimited, or tier (the plan\'s own)')
    .addOption(accountOption())
    .requiredOption('--per-second <n|unlimited|tier>', 'requests per second per account', (v: string) => {
      if (v === 'unlimited' || v === 'tier') return v;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new InvalidArgumentError('a whole number from 1 to 1000000, unlimited, or tier');
      return n;
    })
    .action(async (opts: { account: string; perSecond: number | 'unlimited' | 'tier'; json?: boolean }) => {
      await withServices(async (s) => {
        const { changed } = await setRateLimit(s, opts.account, opts.perSecond);
        printer(Boolean(opts.json))(
          `rate limit of ${opts.account}: ${opts.perSecond === 'tier' ? "the plan's" : opts.perSecond === 'unlimited' ? 'unlimited' : `${opts.perSecond} requests per second per account`}${changed ? '' : ' (unchanged)'}`,
          { account_id: opts.account, per_second: opts.perSecond, changed },
        );
      });
    });

  const packs = program.command('packs').description('Prepaid credit packs');
  packs
    .command('add')
    .description('Add a prepaid pack (credits carry over month to month)')
    .addOption(accountOption())
    .requiredOption('--credits <n>', 'credits in the pack', (v) => Number(v))
    .option('--pack-id <id>', 'purchase reference (default: a new id); the same purchase again adds nothing, another amount under it is refused')
    .option('--json', 'machine-readable output')
    .action((opts: { account: string; credits: number; packId?: string; json?: boolean }) =>
      ledgerCommand(
        opts.account,
        (s) => s.ledger.buyPack(opts.account, { packId: opts.packId ?? s.ids.next('pack_', 16), credits: opts.credits }),
        Boolean(opts.json),
        `pack of ${opts.credits} credits added`,
        // The purchase reference is an idempotency key (the ledger decides it): the same purchase
        // run twice (a retried script) is credited once; another purchase under it is a conflict.
        // A new id is never a repeat.
        opts.packId === undefined ? undefined : `pack ${opts.packId} was added already`,
      ),
    );
}

/** For auditors: `audit` and `ledger export|drop-snapshot`. */
function addLedgerCommands(program: Command): void {
  program
    .command('audit')
    .description("Replay an account's credit ledger from its first event, verify its hash chain and compare every month with the usage read model")
    .option('--account <id>', 'the account to audit')
    .option('--month <YYYY-MM>', 'with --account: only that month, replayed from the previous month\'s closing event', parseMonth)
    .option('--all', 'audit every account')
    .option('--json', 'machine-readable output')
    .action(async (opts: { account?: string; month?: string; all?: boolean; json?: boolean }) => {
      if (!opts.account === !opts.all) throw new CliError('give either --account ID or --all');
      if (opts.month && !opts.account) throw new CliError('--month needs --account');
      await withServices(
        async (s) => {
          const deps = { events: s.events, reads: s.reads };
          if (opts.month) {
            const report = await auditMonth({ ...deps, accountId: opts.account!, month: opts.month });
            printer(Boolean(opts.json))(formatMonthAudit(report), report);
            if (!report.ok) process.exitCode = EXIT.auditDiffers;
            return;
          }
          if (opts.all) {
            const all = await auditAll(deps);
            printer(Boolean(opts.json))(formatAuditSummary(all), all);
            if (!all.ok) process.exitCode = EXIT.auditDiffers;
            return;
          }
          const report = await auditAccount({ ...deps, accountId: opts.account! });
          if (report.events === 0) throw new CliError(`account ${opts.account} has no credit ledger`, 'not_found');
          printer(Boolean(opts.json))(formatAuditReport(report), report);
          if (!report.ok) process.exitCode = EXIT.auditDiffers;
        },
        { readModels: true },
      );
    });

  const ledger = program.command('ledger').description("An account's credit ledger, for auditors");
  ledger
    .command('export')
    .description('Print the ledger (or one month of it) from the log as JSON lines, with the hashes: verify it with the recipe in docs/ledger.md')
    .addOption(accountOption())
    .option('--month <YYYY-MM>', 'only that month (its first prev_hash is the previous month\'s last hash)', parseMonth)
    .action(async (opts: { account: string; month?: string; json?: boolean }) => {
      await withServices(
        async (s) => {
          const lines = await exportLedger({ events: s.events, reads: s.reads, accountId: opts.account, month: opts.month });
          if (lines.length === 0 && opts.month === undefined) throw new CliError(`account ${opts.account} has no credit ledger`, 'not_found');
          // JSON lines are the export's own format; `--json` makes it one document like every command's.
          if (opts.json) process.stdout.write(`${JSON.stringify({ account_id: opts.account, month: opts.month ?? null, lines })}\n`);
          else for (const line of lines) process.stdout.write(`${JSON.stringify(line)}\n`);
        },
        { readModels: true },
      );
    });

  ledger
    .command('drop-snapshot')
    .description("Drop an account's ledger snapshot (a cache, e.g. one the audit reports as differing): the next start folds its stream from the log")
    .option('--account <id>', 'the account')
    .option('--all', 'every account')
    .action(async (opts: { account?: string; all?: boolean; json?: boolean }) => {
      if (!opts.account === !opts.all) throw new CliError('give either --account ID or --all');
      await withServices(async (s) => {
        const dropped = await dropLedgerSnapshots(s.reads, opts.account ?? null);
        printer(Boolean(opts.json))(`${dropped} ledger snapshot${dropped === 1 ? '' : 's'} dropped`, { dropped, account_id: opts.account ?? null });
      });
    });
}

/** `scores <name> on|off --account A`: one on/off switch of an account's ledger. */
function addSwitch(
  program: Command,
  name: string,
  description: string,
  label: string,
  flip: (s: Services, accountId: string, on: boolean) => Promise<LedgerOutcome>,
): void {
  program
    .command(name)
    .description(description)
    .argument('<state>', 'on or off')
    .addOption(accountOption())
    .option('--json', 'machine-readable output')
    .action((state: string, opts: { account: string; json?: boolean }) => {
      const on = onOff(state);
      return ledgerCommand(opts.account, (s) => flip(s, opts.account, on), Boolean(opts.json), `${label} ${state}`);
    });
}

function onOff(state: string): boolean {
  if (state === 'on') return true;
  if (state === 'off') return false;
  throw new CliError(`expected "on" or "off", got "${state}"`);
}

/**
 * Exit codes: 1 a runtime error, 2 a usage error (an unknown command or option, a missing argument,
 * a bad value: as POSIX utilities and commander's own conventions have it), 3 `audit` found a
 * difference (a finding, neither of the two).
 */
const EXIT = { runtime: 1, usage: 2, auditDiffers: 3 } as const;

/** The stable codes of the CLI's own errors (besides the service's error codes, src/core/errors.ts). */
const CLI_ERRORS = {
  usage: 'Usage error',
  file_unreadable: 'File cannot be read',
  invalid_file: 'File not valid',
  config_invalid: 'Configuration not valid',
  cannot_listen: 'Cannot listen',
  busy: 'Another process holds the store',
  not_found: 'Not found',
  internal: 'Internal error',
} as const;
type CliErrorCode = keyof typeof CLI_ERRORS;

/** An error the CLI reports in one line: a usage error unless `code` says otherwise. */
class CliError extends Error {
  constructor(
    message: string,
    readonly code: CliErrorCode = 'usage',
  ) {
    super(message);
  }
}

/** What `--json` prints on stderr for an error: a problem-like object with a stable `code`. */
interface CliProblem {
  code: string;
  title: string;
  detail: string;
  exit_code: number;
  [extension: string]: unknown;
}

function problemOfError(err: unknown): CliProblem {
  const own = (code: CliErrorCode, detail: string): CliProblem => ({ code, title: CLI_ERRORS[code], detail, exit_code: code === 'usage' ? EXIT.usage : EXIT.runtime });
  if (err instanceof CommanderError) return own('usage', err.code === 'commander.help' ? 'no command given: `scores --help` lists them' : err.message.replace(/^error: /, ''));
  if (err instanceof AppError) return { ...err.extensions, code: err.code, title: err.title, status: err.status, detail: err.detail, exit_code: EXIT.runtime };
  if (err instanceof CliError) return own(err.code, err.message);
  if (err instanceof IngestValidationError) return own('invalid_file', err.message);
  if (err instanceof ConfigError) return own('config_invalid', err.message);
  if (err instanceof ListenError) return own('cannot_listen', err.message);
  if (err instanceof StoreBusyError) return own('busy', err.message);
  return own('internal', err instanceof Error ? err.message : String(err));
}

/** Whether the command line asks for JSON (before a `--`, after which words are arguments). */
function wantsJson(argv: string[]): boolean {
  const words = argv.slice(2);
  const end = words.indexOf('--');
  return (end === -1 ? words : words.slice(0, end)).includes('--json');
}

/**
 * Runs the CLI. An error sets exit code 2 (usage) or 1 (runtime) and prints one line on stderr:
 * the message, or under `--json` the problem object (commander's own text and help left out).
 */
export async function runCli(argv: string[]): Promise<void> {
  const json = wantsJson(argv);
  const program = buildCli();
  if (json) {
    for (const c of [program, ...allCommands(program)]) c.configureOutput({ outputError: () => undefined, writeErr: () => undefined });
  }
  try {
    await program.parseAsync(argv);
  } catch (err) {
    // --help and --version end by an exception too.
    if (err instanceof CommanderError && err.exitCode === 0) return;
    const problem = problemOfError(err);
    process.exitCode = problem.exit_code;
    if (json) process.stderr.write(`${JSON.stringify(problem)}\n`);
    // Commander has printed its message (and the help) already.
    else if (err instanceof CommanderError) return;
    else if (err instanceof AppError) process.stderr.write(`error (${err.code}): ${err.detail}\n`);
    else if (problem.code === 'internal') process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    else process.stderr.write(`${problem.detail}\n`);
  }
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}
