import { ConfigError, type Config } from './config.js';

/** A process role could not run on this configuration (`--role api` or `scores worker` on the embedded store). */
export class RoleError extends ConfigError {}

/**
 * Split roles (`scores serve --role api`, `scores worker`) share the event log and the read models
 * between processes, so both must be on a server: the embedded SQLite file is one process's (its
 * bus is in memory, and an API there would wait for projections no other process can commit).
 * `npm start` / `scores serve` without `--role` runs everything in one process on any store.
 */
export function requireSharedStores(config: Config, role: string): void {
  const missing = [
    config.postgresUrl || config.esdbUrl ? null : 'POSTGRES_URL (or ESDB_URL) for the event log',
    config.readStore !== 'sqlite' ? null : 'POSTGRES_URL (or MONGODB_URI) for the read models',
  ].filter((m): m is string => m !== null);
  if (missing.length) {
    throw new RoleError(
      `${role} runs beside other processes on shared engines; set ${missing.join(' and ')} ` +
        '(`npm run engines` prints them), or run `scores serve` without --role: one process with every job on the embedded store',
    );
  }
}
