import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../core/errors.js';
import { projectRoot } from '../../core/paths.js';
import { PRIVATE_UMASK } from '../../core/private-files.js';
import { addAccountCommands } from './accounts.commands.js';
import { addBackupCommands } from './backup.commands.js';
import { problemOfError } from './cli-errors.js';
import { addExportCommands } from './exports.commands.js';
import { addIngestCommand } from './ingest.commands.js';
import { addKeyCommands } from './keys.commands.js';
import { addLedgerCommands } from './ledger.commands.js';
import { addReplayCommand } from './replay.commands.js';
import { addReplicateCommands } from './replicate.commands.js';
import { addSeedCommand } from './seed.commands.js';
import { addServeCommand } from './serve.commands.js';
import { addWorkerCommand } from './worker.commands.js';
import { addFleetCommands } from './fleet.commands.js';
import { addWebhookCommands } from './webhooks.commands.js';

/** `scores`: each command group in the file named for it, in the order `--help` lists them. */
export function buildCli(): Command {
  const program = new Command('scores')
    .description('Operate the scores service: serve, seed, replay, ingest.')
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride();
  addServeCommand(program);
  addWorkerCommand(program);
  addFleetCommands(program);
  addSeedCommand(program);
  addReplayCommand(program);
  addIngestCommand(program);
  addKeyCommands(program);
  addAccountCommands(program);
  addLedgerCommands(program);
  addBackupCommands(program);
  addWebhookCommands(program);
  addExportCommands(program);
  addReplicateCommands(program);
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
  // Whatever the shell's umask, nothing this process writes is readable by another local user.
  process.umask(PRIVATE_UMASK);
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
