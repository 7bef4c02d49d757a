import type { Command } from 'commander';
import { createAccountWithKey, issueKey, revokeKey, rotateKey } from '../../../commands/manage-keys/keys.handler.js';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT, MAX_KEY_NAME_LENGTH } from '../../domain/accounts/api-keys.js';
import type { Tier } from '../../domain/plans.js';
import { CliError } from './cli-errors.js';
import { printer, tierOption, withServices } from './command-kit.js';

/** `scores keys create|revoke|rotate`. */
export function addKeyCommands(program: Command): void {
  const keys = program.command('keys').description('API keys: create (with a new account, or on one), revoke, rotate');
  keys
    .command('create')
    .description(`Create an account on a tier and print its first API key (shown once), or with --account another key of that account (at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active)`)
    .addOption(tierOption())
    .option('--account <id>', 'add the key to this existing account instead (it keeps its plan)')
    .option('--pro', 'the account holds a consumer Pro membership (overlay)')
    .option('--email <email>', 'where usage alerts are sent')
    .option('--name <name>', `what the account calls the key (at most ${MAX_KEY_NAME_LENGTH} characters; default "Key <n>", its place on the account)`)
    .option('--json', 'machine-readable output (the default for this command)')
    .action(async (opts: { tier?: Tier; account?: string; pro?: boolean; email?: string; name?: string }) => {
      if (opts.email !== undefined && !/^[^@\s]+@[^@\s]+$/.test(opts.email)) throw new CliError(`--email ${opts.email} is not an email address`);
      if ((opts.account === undefined) === (opts.tier === undefined)) throw new CliError('give --tier for a new account, or --account for another key of an existing one');
      if (opts.account !== undefined && (opts.pro || opts.email !== undefined)) throw new CliError('--pro and --email describe a new account: give them with --tier');
      const { account, tier } = opts;
      await withServices(async (s) => {
        const issued =
          account !== undefined ? await issueKey(s, account, opts.name) : await createAccountWithKey(s, { tier: tier!, pro: Boolean(opts.pro), email: opts.email ?? null, name: opts.name });
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
