import Database from 'better-sqlite3';

/**
 * A consistent copy of a live SQLite file through SQLite's online backup API, while other
 * processes write to it. Every step after the first copies all remaining pages at once: in WAL
 * mode that step is one read transaction, which writers do not wait for and which a write by
 * another connection cannot restart (a copy in small steps would restart at every write, and
 * under load never finish).
 */
export async function onlineBackup(source: string, destination: string): Promise<{ pages: number }> {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    const { totalPages } = await db.backup(destination, { progress: ({ totalPages: total }) => Math.max(total, 100) });
    return { pages: totalPages };
  } finally {
    db.close();
  }
}

/** SQLite's own check of a file's structure: `[]` when it is sound, else what it found (at most 20 lines). */
export function integrityProblems(file: string): string[] {
  let db: Database.Database | null = null;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const rows = db.pragma('integrity_check(20)') as { integrity_check: string }[];
    const lines = rows.map((r) => r.integrity_check);
    return lines.length === 1 && lines[0] === 'ok' ? [] : lines;
  } catch (err) {
    return [(err as Error).message];
  } finally {
    db?.close();
  }
}
