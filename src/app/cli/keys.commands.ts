import type { Command } from 'commander';
import { createAccountWithKey, issueKey, revokeKey, rotateKey, setKeyLimits } from '../../../commands/manage-keys/keys.handler.js';
import { listAccountKeys } from '../../../queries/get-key-usage/get-keys.query.js';
import { spentAt } from '../../domain/ledger/key-spend.js';
import { keyLimitsOptions, limitsChangeOf, describeKey, type LimitsOptions } from './key-limit-options.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT, MAX_KEY_NAME_LENGTH } from '../../domain/accounts/api-keys.js';
import type { Tier } from '../../domain/plans.js';
import { CliError } from './cli-errors.js';
import { printer, tierOption, withServices } from './command-kit.js';

/** `scores keys create|list|limits|revoke|rotate`. */
export function addKeyCommands(program: Command): void {
  const keys = program.command('keys').description('API keys: create (with a new account, or on one), list, limit, revoke, rotate');
  const create = keys
    .command('create')
    .description(`Create an account on a tier and print its first API key (shown once), or with --account another key of that account (at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active)`)
    .addOption(tierOption())
    .option('--account <id>', 'add the key to this existing account instead (it keeps its plan)')
    .option('--pro', 'the account holds a consumer Pro membership (overlay)')
    .option('--email <email>', 'where usage alerts are sent')
    .option('--name <name>', `what the account calls the key (at most ${MAX_KEY_NAME_LENGTH} characters; default "Key <n>", its place on the account)`)
    .option('--json', 'machine-readable output (the default for this command)');
  keyLimitsOptions(create, false)
    .action(async (opts: { tier?: Tier; account?: string; pro?: boolean; email?: string; name?: string } & LimitsOptions) => {
      if (opts.email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(opts.email)) throw new CliError(`--email ${opts.email} is not an email address`);
      if ((opts.account === undefined) === (opts.tier === undefined)) throw new CliError('give --tier for a new account, or --account for another key of an existing one');
      if (opts.account !== undefined && (opts.pro || opts.email !== undefined)) throw new CliError('--pro and --email describe a new account: give them with --tier');
      const { account, tier } = opts;
      const limits = limitsChangeOf(opts);
      await withServices(async (s) => {
        const issued =
          account !== undefined ? await issueKey(s, account, opts.name, limits) : await createAccountWithKey(s, { tier: tier!, pro: Boolean(opts.pro), email: opts.email ?? null, name: opts.name, limits });
        // Always JSON with `account_id` and `key` (a script stores the key, shown once).
        printer(true)('', issued);
      });
    });
  addListAndLimits(keys);
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

/** `scores keys list` and `scores keys limits`. */
function addListAndLimits(keys: Command): void {
  keys
    .command('list')
    .description("An account's keys: their limits, what each spent today and this month (UTC, the ledger's own figures) and its last charged call")
    .requiredOption('--account <id>', 'account id (from `keys create`)')
    .option('--json', 'machine-readable output')
    .action(async (opts: { account: string; json?: boolean }) => {
      await withServices(async (s) => {
        const spend = await s.ledger.keySpend(opts.account);
        const at = s.clock.now().toISOString();
        const spent = new Map(Object.keys(spend).map((k) => [k, spentAt(spend, k, at)]));
        const list = await listAccountKeys(s, opts.account, spent);
        printer(Boolean(opts.json))(list.map(describeKey).join('\n') || 'no keys', { account_id: opts.account, keys: list });
      }, { readModels: true });
    });
  const limits = keys
    .command('limits')
    .description('Change a key\'s limits: credits per UTC day and month, expiry, read-only, operations (an option left out stays as it is; "none" or "all" removes it). Every API process enforces the change within seconds')
    .argument('<key_id>', 'the key id printed by `keys create`')
    .option('--json', 'machine-readable output');
  keyLimitsOptions(limits, true).action(async (keyId: string, opts: LimitsOptions & { json?: boolean }) => {
    const change = limitsChangeOf(opts) ?? {};
    await withServices(async (s) => {
      const r = await setKeyLimits(s, keyId, change);
      printer(Boolean(opts.json))(`${r.changed ? 'key limits set' : 'key limits unchanged'}: ${describeKey({ key_id: keyId, ...r.limits })}`, r);
    }, { readModels: true });
  });
}
