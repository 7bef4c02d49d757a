#!/usr/bin/env node
// `npm run engines`: Apache Kafka, PostgreSQL, FerretDB and stripe-mock on loopback, installed on
// first use into .engines/ (git-ignored), and the tool Litestream (installed, never started: `scores replicate`
// runs it). docs/operations.md#engines has the versions, ports and what was verified;
// docs/backup-litestream.md the tool.
//
//   npm run engines [-- start] [kafka|postgresql|ferretdb|stripe-mock|litestream…]  install if needed, start what is not running,
//                                                            print the environment (stdout) that points the service at them
//   npm run engines -- install [litestream]                   install the tools only
//   npm run engines -- stop [names…]                          stop them (data is kept for the next start)
//   npm run engines -- status                                 what runs, on which port (exit 0: all the servers)
//   npm run engines -- run -- CMD ARGS…                       start them, then run CMD with that environment
//   npm run engines -- postgresql-backup [DIR]                a base backup of PostgreSQL (which archives its WAL)
//   npm run engines -- postgresql-restore BACKUP [--target-time T]  that backup and the archive into an empty cluster
//
// `eval "$(npm run --silent engines)"` exports the environment into a shell; it is also written
// to .engines/env (KEY=value lines, for `node --env-file`). Progress and errors go to stderr.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EngineError, HOME, PORTS, dir, log } from './lib.mjs';
import { kafka } from './kafka.mjs';
import { postgresql } from './postgresql.mjs';
import { baseBackup, restore } from './postgresql-backup.mjs';
import { ferretdb } from './ferretdb.mjs';
import { litestream } from './litestream.mjs';
import { stripeMock } from './stripe-mock.mjs';

/** In start-up order: FerretDB stores its data in PostgreSQL. Tools (`tool: true`) are installed, not started. */
const ENGINES = [postgresql, ferretdb, kafka, stripeMock, litestream];

/** The engines named (all when none is), with those they need when `withNeeds` (to start them). */
function select(names, withNeeds = true) {
  for (const n of names) {
    if (!ENGINES.some((e) => e.name === n)) throw new EngineError(`unknown engine ${n} (known: ${ENGINES.map((e) => e.name).join(', ')})`);
  }
  if (names.length === 0) return ENGINES;
  const wanted = new Set(names.flatMap((n) => [n, ...(withNeeds ? (ENGINES.find((e) => e.name === n).needs ?? []) : [])]));
  return ENGINES.filter((e) => wanted.has(e.name));
}

async function start(engines) {
  const missing = engines.flatMap((e) => e.missing().map((m) => `  - ${m}`));
  if (missing.length > 0) throw new EngineError(`cannot start the engines; missing:\n${missing.join('\n')}`);
  for (const engine of engines) {
    if (!(await engine.running())) await engine.start();
    else if (engine.reuse) await engine.reuse();
    else log(`${engine.name}: ${engine.tool ? 'installed' : 'already running, reused'}`);
  }
  await writeEnvFile();
  return Object.assign({}, ...engines.map((e) => e.env()));
}

/** .engines/env names every engine that runs, not only those this start named (`scores fleet up` starts two of three). */
async function writeEnvFile() {
  const running = [];
  for (const engine of ENGINES) if (await engine.running()) running.push(engine);
  const env = Object.assign({}, ...running.map((e) => e.env()));
  writeFileSync(join(dir(), 'env'), Object.entries(env).map(([k, v]) => `${k}=${v}\n`).join(''));
}

async function stop(engines) {
  for (const engine of [...engines].reverse().filter((e) => !e.tool)) {
    log(`${engine.name}: ${(await engine.stop()) ? 'stopped' : 'was not running'}`);
  }
}

/** Exits 0 when every server runs, 3 otherwise (a tool not installed yet does not count: `.ci/run` asks whether it started the servers). */
async function status() {
  let all = true;
  for (const engine of ENGINES) {
    const running = await engine.running();
    if (engine.tool) {
      process.stdout.write(`${engine.label.padEnd(34)} ${running ? 'installed' : 'not installed'}\n`);
      continue;
    }
    all &&= running;
    process.stdout.write(`${engine.label.padEnd(34)} ${(running ? 'running' : 'stopped').padEnd(8)} 127.0.0.1:${engine.port ?? PORTS[engine.name]}\n`);
  }
  process.stdout.write(`(installed under ${HOME})\n`);
  return all ? 0 : 3;
}

function printExports(env) {
  for (const [k, v] of Object.entries(env)) process.stdout.write(`export ${k}='${v}'\n`);
}

/** node:util's parseArgs, its refusals (an unknown option, a missing value) told as the user's to fix. */
function parseOptions(args, options) {
  try {
    return parseArgs({ args, options, allowPositionals: true });
  } catch (err) {
    throw new EngineError(err.message);
  }
}

async function main(argv) {
  const dashes = argv.indexOf('--');
  const words = dashes === -1 ? argv : argv.slice(0, dashes);
  const command = ['start', 'install', 'stop', 'status', 'env', 'run', 'postgresql-backup', 'postgresql-restore'].includes(words[0]) ? words.shift() : 'start';
  switch (command) {
    case 'start':
      printExports(await start(select(words)));
      return 0;
    case 'install': {
      const tools = words.length ? select(words, false) : ENGINES.filter((e) => e.tool);
      const servers = tools.filter((e) => !e.tool).map((e) => e.name);
      if (servers.length) throw new EngineError(`install takes tools (${ENGINES.filter((e) => e.tool).map((e) => e.name).join(', ')}); ${servers.join(', ')}: use start`);
      printExports(await start(tools));
      return 0;
    }
    case 'stop':
      await stop(select(words, false));
      return 0;
    case 'status':
      return status();
    case 'postgresql-backup':
      if (words.length > 1) throw new EngineError('usage: engines.mjs postgresql-backup [DIR]');
      process.stdout.write(`${await baseBackup(words[0])}\n`);
      return 0;
    case 'postgresql-restore': {
      const { values, positionals } = parseOptions(words, { 'target-time': { type: 'string' } });
      if (positionals.length !== 1) throw new EngineError('usage: engines.mjs postgresql-restore BACKUP [--target-time 2026-11-29T17:00:00Z]');
      process.stdout.write(`${await restore(positionals[0], { targetTime: values['target-time'] })}\n`);
      return 0;
    }
    case 'env':
      printExports(Object.assign({}, ...select(words).map((e) => e.env())));
      return 0;
    case 'run': {
      const [cmd, ...args] = dashes === -1 ? [] : argv.slice(dashes + 1);
      if (!cmd) throw new EngineError('usage: engines.mjs run [names…] -- COMMAND ARGS…');
      const env = await start(select(words));
      const child = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env }, shell: false });
      if (child.error) throw child.error;
      return child.status ?? 1;
    }
  }
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    log(err instanceof EngineError ? err.message : (err.stack ?? String(err)));
    process.exitCode = 1;
  },
);
