import { InvalidArgumentError, type Command } from 'commander';
import { DEFAULT_OVERLAP_HOURS, rotateWebhookSecret } from '../../../commands/manage-webhooks/webhooks.handler.js';
import { rotateDataKey } from '../../../infra/files/data-keyring.js';
import { CliError } from './cli-errors.js';
import { accountOption, printer, withServices } from './command-kit.js';

/** `webhooks rotate-secret` (an operator acting for a customer) and `secrets rotate-key` (docs/operations.md, "Secrets at rest"). */
export function addWebhookCommands(program: Command): void {
  const webhooks = program.command('webhooks').description("An account's webhooks, for operators acting on a customer's request");
  webhooks
    .command('rotate-secret')
    .description('Give a webhook a new signing secret, printed once; the old one keeps signing beside it during the overlap')
    .addOption(accountOption())
    .requiredOption('--webhook <id>', 'the webhook id', positiveInteger)
    .option('--overlap-hours <n>', `hours the old secret still signs (0 to 168; default ${DEFAULT_OVERLAP_HOURS})`, wholeNumber)
    .action(async (opts: { account: string; webhook: number; overlapHours?: number; json?: boolean }) => {
      await withServices(async (s) => {
        const rotated = await rotateWebhookSecret(s, opts.account, opts.webhook, opts.overlapHours);
        printer(Boolean(opts.json))(
          `Webhook ${rotated.id}: new secret ${rotated.secret} (shown once). The previous secret signs beside it until ${rotated.previous_secret_expires_at}.`,
          rotated,
        );
      });
    });

  program
    .command('secrets')
    .description('The data keys that seal secrets at rest')
    .command('rotate-key')
    .description("Seal new secrets under a new data key in the data directory; the old key stays to open what it sealed (restart the processes to use it)")
    .action(async (opts: { json?: boolean }) => {
      await withServices(async (s) => {
        if (s.secretsKeySource !== 'file') throw new CliError('the data key is not the data directory\'s: set a new DATA_ENCRYPTION_KEY and add the old one to DATA_ENCRYPTION_RETIRED_KEYS', 'config_invalid');
        const rotated = rotateDataKey(s.config.dataDir, s.transportClock.now());
        printer(Boolean(opts.json))(`Data key ${rotated.retired} retired (it still opens what it sealed); key ${rotated.current} seals from now on`, rotated);
      });
    });
}

function positiveInteger(text: string): number {
  const n = Number(text);
  if (!/^[1-9][0-9]*$/.test(text) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

function wholeNumber(text: string): number {
  if (!/^[0-9]+$/.test(text)) throw new InvalidArgumentError('must be a whole number of hours');
  return Number(text);
}
