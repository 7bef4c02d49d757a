import { InvalidArgumentError, type Command } from 'commander';
import { dropLedgerSnapshots } from '../../../commands/ledger/drop-snapshots.handler.js';
import { auditAccount, auditAll, formatAuditReport, formatAuditSummary } from '../../../queries/audit-ledger/audit-ledger.query.js';
import { auditMonth, exportLedger, formatMonthAudit } from '../../../queries/audit-ledger/ledger-month.query.js';
import { auditAgainstHead, auditInvoiceHeads, formatHeadAudit, readKept } from '../../../queries/audit-ledger/audit-against-head.query.js';
import { readFileSync } from 'node:fs';
import type { Services } from '../container.js';
import { ledgerHead } from '../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { rotateLedgerKey } from '../../../infra/files/ledger-keyring.js';
import { CliError, EXIT } from './cli-errors.js';
import { accountOption, printer, withServices } from './command-kit.js';

/** For auditors: `audit` and `ledger export|head|rotate-key|drop-snapshot`. */
export function addLedgerCommands(program: Command): void {
  addAuditCommand(program);
  const ledger = program.command('ledger').description("An account's credit ledger, for auditors");
  addExportCommand(ledger);
  addSigningCommands(ledger);
  addDropSnapshotCommand(ledger);
}

function addAuditCommand(program: Command): void {
  program
    .command('audit')
    .description("Replay an account's credit ledger from its first event, verify its hash chain and compare every month with the usage read model")
    .option('--account <id>', 'the account to audit')
    .option('--month <YYYY-MM>', 'with --account: only that month, replayed from the previous month\'s closing event', parseMonth)
    .option('--all', 'audit every account')
    .option('--against <file>', 'hold the log to a signed head kept earlier (a JSON file: the head, or a /v1/usage/ledger page or `ledger export --json` with it) and name the first rewritten line', readKeptFile)
    .option('--json', 'machine-readable output')
    .action(async (opts: { account?: string; month?: string; all?: boolean; against?: unknown; json?: boolean }) => {
      if (opts.against !== undefined) return auditAgainst(opts.against, opts);
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
          const heads = await auditInvoiceHeads({ ...deps, keys: s.keyring.keys, accountId: opts.account! });
          const text = heads.ok
            ? formatAuditReport(report)
            : [formatAuditReport(report), `Signed heads on invoices: ${heads.problems.length} of ${heads.checked} differ from the log.`, ...heads.problems.map((p) => `  - ${p}`)].join('\n');
          printer(Boolean(opts.json))(text, { ...report, ok: report.ok && heads.ok, invoice_heads: heads });
          if (!report.ok || !heads.ok) process.exitCode = EXIT.auditDiffers;
        },
        { readModels: true },
      );
    });
}

function addExportCommand(ledger: Command): void {
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
}

/** `ledger head` and `ledger rotate-key` (docs/ledger.md, "Signed heads"). */
function addSigningCommands(ledger: Command): void {
  ledger
    .command('head')
    .description("Print the account's ledger head (its last line) signed now with the service's key: what /v1/usage/ledger gives as signed_head")
    .addOption(accountOption())
    .action(async (opts: { account: string; json?: boolean }) => {
      await withServices(
        async (s) => {
          if (!s.keyring.signer) throw new CliError('this process has no ledger signing key (LEDGER_SIGNING_KEY is required on a shared log)', 'config_invalid');
          const head = await ledgerHead(s.reads, s.events, opts.account);
          if (!head) throw new CliError(`account ${opts.account} has no credit ledger`, 'not_found');
          process.stdout.write(`${JSON.stringify(s.keyring.signer.sign({ ...head, at: s.clock.now().toISOString() }))}\n`);
        },
        { readModels: true },
      );
    });

  ledger
    .command('rotate-key')
    .description('Replace the data directory\'s ledger signing key with a new one; the old public key stays listed as retired (heads it signed stay valid)')
    .action(async (opts: { json?: boolean }) => {
      await withServices(async (s) => {
        if (s.keyring.source !== 'file') throw new CliError('the signing key is not the data directory\'s: rotate LEDGER_SIGNING_KEY (its old public key into LEDGER_RETIRED_KEYS)', 'config_invalid');
        const rotated = rotateLedgerKey(s.config.dataDir, s.clock.now());
        printer(Boolean(opts.json))(`Key ${rotated.retired.key_id} retired; key ${rotated.current.key_id} signs from now on (restart the server to use it)`, rotated);
      });
    });
}

function addDropSnapshotCommand(ledger: Command): void {
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

/** `--against FILE`: the file's JSON. */
function readKeptFile(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new InvalidArgumentError(`must be a JSON file holding a signed ledger head (${(err as Error).message})`);
  }
}

/** `scores audit --against FILE [--account ID]`: the log held to a kept signed head, with the service's keys (retired ones too). */
async function auditAgainst(kept: unknown, opts: { account?: string; month?: string; all?: boolean; json?: boolean }): Promise<void> {
  if (opts.all || opts.month) throw new CliError('--against checks the one account its signed head names: not with --all or --month');
  const headAccount = (readKept(kept).head as { account_id?: unknown } | null)?.account_id;
  if (opts.account && headAccount !== opts.account) throw new CliError(`the signed head is of account ${String(headAccount)}, not ${opts.account}`);
  await withServices(
    async (s: Services) => {
      const report = await auditAgainstHead({ events: s.events, reads: s.reads, keys: s.keyring.keys, kept });
      printer(Boolean(opts.json))(formatHeadAudit(report), report);
      if (!report.ok) process.exitCode = EXIT.auditDiffers;
    },
    { readModels: true },
  );
}

/** `--month`: a calendar month YYYY-MM. */
function parseMonth(value: string): string {
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(value)) throw new InvalidArgumentError('must be a month YYYY-MM');
  return value;
}
