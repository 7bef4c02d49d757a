import { CommanderError } from 'commander';
import { IngestValidationError } from '../../../commands/ingest/ingest.parser.js';
import { AppError } from '../../core/errors.js';
import { ConfigError } from '../config.js';
import { ListenError } from '../server.js';
import { StoreBusyError } from '../store-users.js';
import { BackupError } from '../backup/store-backup.js';
import { ReplicationError, type ReplicationErrorCode } from '../backup/litestream.js';

/**
 * Exit codes: 1 a runtime error, 2 a usage error (an unknown command or option, a missing argument,
 * a bad value: as POSIX utilities and commander's own conventions have it), 3 `audit` found a
 * difference, or a backup was refused as not valid (a finding, neither of the two).
 */
export const EXIT = { runtime: 1, usage: 2, auditDiffers: 3 } as const;

const BACKUP_ERRORS: Record<BackupError['code'], string> = {
  backup_unsupported: 'Not the embedded store',
  backup_invalid: 'Backup not valid',
  restore_target_not_empty: 'Data directory holds a store',
  restore_audit_failed: 'Restored log does not verify',
};

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
export type CliErrorCode = keyof typeof CLI_ERRORS;

/** `scores replicate`'s refusals (src/app/backup/litestream.ts; docs/backup-litestream.md). */
const REPLICATION_ERRORS: Record<ReplicationErrorCode, string> = {
  replication_unsupported: 'Not the embedded store',
  litestream_missing: 'Litestream not installed',
  litestream_version: 'Litestream of another version',
  litestream_failed: 'Litestream failed',
  replica_empty: 'Nothing to restore in the replica',
  restore_target_not_empty: 'Data directory holds a store',
  restore_audit_failed: 'Restored log does not verify',
};

/** An error the CLI reports in one line: a usage error unless `code` says otherwise. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: CliErrorCode = 'usage',
  ) {
    super(message);
  }
}

/** What `--json` prints on stderr for an error: a problem-like object with a stable `code`. */
export interface CliProblem {
  code: string;
  title: string;
  detail: string;
  exit_code: number;
  [extension: string]: unknown;
}

export function problemOfError(err: unknown): CliProblem {
  const own = (code: CliErrorCode, detail: string): CliProblem => ({ code, title: CLI_ERRORS[code], detail, exit_code: code === 'usage' ? EXIT.usage : EXIT.runtime });
  if (err instanceof CommanderError) return own('usage', err.code === 'commander.help' ? 'no command given: `scores --help` lists them' : err.message.replace(/^error: /, ''));
  if (err instanceof AppError) return { ...err.extensions, code: err.code, title: err.title, status: err.status, detail: err.detail, exit_code: EXIT.runtime };
  if (err instanceof CliError) return own(err.code, err.message);
  if (err instanceof BackupError) return { code: err.code, title: BACKUP_ERRORS[err.code], detail: err.message, exit_code: err.code === 'backup_invalid' || err.code === 'restore_audit_failed' ? EXIT.auditDiffers : EXIT.runtime };
  if (err instanceof ReplicationError) return { code: err.code, title: REPLICATION_ERRORS[err.code], detail: err.message, exit_code: err.code === 'restore_audit_failed' ? EXIT.auditDiffers : EXIT.runtime };
  if (err instanceof IngestValidationError) return own('invalid_file', err.message);
  if (err instanceof ConfigError) return own('config_invalid', err.message);
  if (err instanceof ListenError) return own('cannot_listen', err.message);
  if (err instanceof StoreBusyError) return own('busy', err.message);
  return own('internal', err instanceof Error ? err.message : String(err));
}
