// Base backups of the engines' PostgreSQL, and a point-in-time restore of one with the WAL archive
// (docs/backup-postgresql.md):
//
//   node scripts/engines/engines.mjs postgresql-backup [DIR]                          pg_basebackup, verified
//   node scripts/engines/engines.mjs postgresql-restore BACKUP [--target-time TIME]   into an empty data directory
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { EngineError, HOST, PORTS, log, run, seconds } from './lib.mjs';
import { USER, archiveDir, backupLabel, backupsDir, dataDir, logTail, ownedByServer, pg, postgresql, privateDir, pruneArchive, psql, restoreCommand, runAsServer, writeServerFile } from './postgresql.mjs';

/** How many of the backups taken into .engines/postgresql/backups are kept; the archive is kept from the oldest of them on. */
const KEEP = 2;

/**
 * A base backup of the running cluster into `target` (new or empty; default a new folder under
 * .engines/postgresql/backups, where older backups beyond KEEP and the WAL only they needed are then
 * removed). Plain format, with the WAL the copy needs streamed in, so it restores by itself (the
 * archive carries it on from there); checked against its manifest by pg_verifybackup. Returns its path.
 */
export async function baseBackup(target) {
  if (!(await postgresql.running())) throw new EngineError('PostgreSQL is not running: start it first (npm run engines -- start postgresql)');
  const backups = backupsDir();
  const into = resolve(target ?? join(backups, new Date().toISOString().replace(/[-:]/g, '')));
  if (existsSync(into) && readdirSync(into).length > 0) throw new EngineError(`${into} is not empty: a base backup goes into a new or empty directory`);
  privateDir(into);
  const started = Date.now();
  const args = ['-h', HOST, '-p', String(PORTS.postgresql), '-U', USER, '-D', into, '--format=plain', '--wal-method=stream', '--checkpoint=fast', '--no-password'];
  runAsServer(pg('pg_basebackup'), args);
  verify(into);
  const label = backupLabel(into);
  log(`postgresql: base backup of ${label.time} in ${into} (${seconds(started)}, verified); the archive carries it on from ${label.walFile}`);
  if (target === undefined) prune(backups);
  return into;
}

/** pg_verifybackup: every file against the backup's manifest (sizes, CRC-32C) and the WAL it needs parsed. */
function verify(backup) {
  try {
    runAsServer(pg('pg_verifybackup'), ['--quiet', backup]);
  } catch (err) {
    throw new EngineError(`${backup} is not a sound base backup (pg_verifybackup): ${err.message}`);
  }
}

/** Drops the backups under `backups` beyond the newest KEEP, then the archived WAL only they needed. */
function prune(backups) {
  const all = readdirSync(backups).filter((name) => existsSync(join(backups, name, 'backup_label'))).sort();
  const dropped = all.slice(0, Math.max(0, all.length - KEEP));
  for (const name of dropped) rmSync(join(backups, name), { recursive: true, force: true });
  if (dropped.length > 0) log(`postgresql: removed ${dropped.length} older base backup(s), the newest ${KEEP} kept`);
  pruneArchive();
}

/** An instant with its zone, as recovery_target_time takes it: `2026-11-29T17:00:00Z`, `2026-11-29 18:00:00.5+01:00`. */
const INSTANT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}(:?\d{2})?)$/;

/**
 * Restores `backup` into the engines' data directory, which must be absent or empty (a restore never
 * writes over a cluster), and replays the WAL archive over it up to `targetTime` (the last
 * transaction committed at or before it) or to the archive's end; starts the cluster and waits until
 * it takes writes. Returns when the restored log's last transaction was committed.
 */
export async function restore(backup, { targetTime } = {}) {
  if (targetTime !== undefined && !(INSTANT.test(targetTime) && !Number.isNaN(Date.parse(targetTime)))) {
    throw new EngineError(`--target-time ${targetTime}: give an instant with its zone (2026-11-29T17:00:00Z)`);
  }
  const from = resolve(backup);
  const label = backupLabel(from);
  if (await postgresql.running()) throw new EngineError('PostgreSQL is running: a restore goes into an empty data directory (stop it and move its data directory away first)');
  const data = dataDir();
  if (existsSync(data) && readdirSync(data).length > 0) throw new EngineError(`${data} is not empty: move it away first (a restore never writes over a cluster)`);
  const started = Date.now();
  verify(from);
  mkdirSync(data, { recursive: true, mode: 0o700 });
  run('cp', ['-a', `${from}/.`, data]);
  if (process.getuid?.() === 0) ownedByServer(data, { recursive: true });
  // The manifest describes the backup, not the cluster it becomes.
  rmSync(join(data, 'backup_manifest'), { force: true });
  writeServerFile(join(data, 'restore.conf'), restoreSettings(targetTime));
  writeServerFile(join(data, 'recovery.signal'), '');
  log(`postgresql: restoring the base backup of ${label.time}, then the archive ${targetTime ? `up to ${targetTime}` : 'to its end'}`);
  try {
    await postgresql.start();
  } catch (err) {
    // Nothing but this restore's copy is there: cleared, so that the next try starts from an empty directory.
    rmSync(data, { recursive: true, force: true });
    throw new EngineError(`the restore failed, its data directory removed: ${err.message}${logTail(6)}`);
  }
  const endsAt = psql('postgres', "SELECT coalesce(pg_last_xact_replay_timestamp()::text, '')").trim();
  rmSync(join(data, 'restore.conf'), { force: true });
  psql('postgres', 'SELECT pg_reload_conf()');
  log(`postgresql: restored in ${seconds(started)}; the last transaction replayed was committed ${endsAt || '(none after the backup)'}. Next: scores replay (the read models)`);
  return endsAt;
}

/**
 * The recovery settings of one restore (restore.conf, removed when it is done). Promote at the
 * target: the cluster takes writes on a new timeline, whose WAL it archives beside the old one's.
 */
function restoreSettings(targetTime) {
  return [
    '# Written by scripts/engines/postgresql-backup.mjs for one restore; removed once it is done.',
    `restore_command = '${restoreCommand(archiveDir())}'`,
    // PostgreSQL 15 refuses the zone written `Z` here (not in SQL): the same instant as `+00`.
    ...(targetTime ? [`recovery_target_time = '${targetTime.replace(/Z$/, '+00')}'`, "recovery_target_action = 'promote'"] : []),
    '',
  ].join('\n');
}
