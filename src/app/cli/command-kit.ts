import { Option } from 'commander';
import { TIERS } from '../../domain/plans.js';
import { loadConfig } from '../config.js';
import { openServices, type Services } from '../container.js';

/** Output helpers: `--json` prints one JSON document on stdout; otherwise readable lines. */
export function printer(json: boolean) {
  return (human: string, data: unknown) => {
    process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${human}\n`);
  };
}

/** Opens the ports for one command; `readModels` first brings the read models up to the log. */
export async function withServices<T>(fn: (s: Services) => Promise<T>, options: { readModels?: boolean } = {}): Promise<T> {
  const services = await openServices(loadConfig());
  try {
    if (options.readModels) await services.runner.start();
    return await fn(services);
  } finally {
    await services.close();
  }
}

export const tierOption = () => new Option('--tier <tier>', 'plan tier').choices(TIERS);
export const accountOption = () => new Option('--account <id>', 'account id (from `keys create`)').makeOptionMandatory();
