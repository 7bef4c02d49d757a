import { InvalidArgumentError, type Command } from 'commander';
import { setRateLimit } from '../../../commands/manage-keys/keys.handler.js';
import type { LedgerOutcome } from '../../../commands/ledger/ledger.handler.js';
import { usageFigures } from '../../domain/ledger/ledger.figures.js';
import type { Tier } from '../../domain/plans.js';
import type { Services } from '../container.js';
import { forgetAccount } from '../forget-account.js';
import { CliError } from './cli-errors.js';
import { accountOption, printer, tierOption, withServices } from './command-kit.js';

/** What an account buys and may do: `plan`, `rate-limit`, `packs` (Pro and overage are switches, `addSwitch`). */
export function addAccountCommands(program: Command): void {
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

  addForgetCommand(program);

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

/** `scores accounts forget A --yes`: the account forgotten, its books kept (src/app/forget-account.ts). */
function addForgetCommand(program: Command): void {
  program
    .command('accounts')
    .description('Accounts as a whole')
    .command('forget')
    .description("Forget an account (GDPR art. 17): revoke its keys, delete its webhooks, destroy the key its address and secrets are sealed under; its ledger and invoices stay (docs/ledger.md)")
    .argument('<account>', 'the account id')
    .option('--yes', 'confirm: this cannot be undone')
    .option('--json', 'machine-readable output')
    .action(async (account: string, opts: { yes?: boolean; json?: boolean }) => {
      if (!opts.yes) throw new CliError(`forgetting ${account} cannot be undone: run it again with --yes`);
      await withServices(async (s) => {
        const out = await forgetAccount(s, account);
        printer(Boolean(opts.json))(
          `${account} forgotten${out.already ? ' (already; finished what was left)' : ''}: ${out.keys_revoked} key(s) revoked, ${out.webhooks_deleted.length} webhook(s) deleted, ${out.mails_removed} kept mail(s) removed, ${out.requests_deleted} logged call(s) deleted, personal-data key destroyed`,
          out,
        );
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
