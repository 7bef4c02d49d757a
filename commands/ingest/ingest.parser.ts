import { parse as parseCsv } from 'csv-parse/sync';
import { INGEST_KINDS, ingestSchemas, kindFromColumns, type IngestKind, type IngestRow } from './ingest.schema.js';

export interface RowError {
  line: number;
  reason: string;
}

export class IngestValidationError extends Error {
  constructor(readonly errors: RowError[]) {
    const shown = errors.slice(0, 20).map((e) => `  line ${e.line}: ${e.reason}`);
    if (errors.length > 20) shown.push(`  … and ${errors.length - 20} more`);
    super(`ingest rejected, nothing was written (${errors.length} bad row${errors.length === 1 ? '' : 's'}):\n${shown.join('\n')}`);
    this.name = 'IngestValidationError';
  }
}

/**
 * Validates one raw record. A record's kind comes from its `type` field, else from the file's
 * `kind` (a flag or the CSV header).
 */
export function validateRecord(
  raw: unknown,
  line: number,
  fallbackKind: IngestKind | null,
): { ok: true; row: IngestRow } | { ok: false; error: RowError } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { ok: false, error: { line, reason: 'must be a JSON object' } };
  }
  const { type, ...fields } = raw as Record<string, unknown>;
  const kind = (type ?? fallbackKind) as IngestKind | null;
  if (!kind || !INGEST_KINDS.includes(kind)) {
    return {
      ok: false,
      error: { line, reason: `unknown row type ${JSON.stringify(type ?? null)} (expected one of ${INGEST_KINDS.join(', ')})` },
    };
  }
  const result = ingestSchemas[kind].safeParse(fields);
  if (!result.success) {
    const reason = result.error.issues.map((i) => `${i.path.join('.') || 'row'} ${i.message}`).join('; ');
    return { ok: false, error: { line, reason } };
  }
  return { ok: true, row: { kind, line, value: result.data } as IngestRow };
}

/** Parses a CSV or JSONL file's text into validated rows; throws with every bad row's line. */
export function parseIngestFile(text: string, format: 'csv' | 'jsonl', kind: IngestKind | null = null): IngestRow[] {
  const rows: IngestRow[] = [];
  const errors: RowError[] = [];
  const take = (raw: unknown, line: number, fallback: IngestKind | null) => {
    const r = validateRecord(raw, line, fallback);
    if (r.ok) rows.push(r.row);
    else errors.push(r.error);
  };
  if (format === 'jsonl') {
    text.split(/\r?\n/).forEach((l, i) => {
      if (l.trim() === '') return;
      let raw: unknown;
      try {
        raw = JSON.parse(l);
      } catch {
        errors.push({ line: i + 1, reason: 'is not valid JSON' });
        return;
      }
      take(raw, i + 1, kind);
    });
  } else {
    let records: { record: Record<string, string>; info: { lines: number } }[];
    try {
      records = parseCsv<{ record: Record<string, string>; info: { lines: number } }>(text, {
        columns: true,
        skip_empty_lines: true,
        trim: true,
        info: true,
        bom: true,
      });
    } catch (err) {
      const e = err as { lines?: number; message: string };
      throw new IngestValidationError([{ line: e.lines ?? 0, reason: `CSV: ${e.message}` }]);
    }
    const columns = records[0] ? Object.keys(records[0].record) : [];
    const fileKind = kind ?? (columns.includes('type') ? null : kindFromColumns(columns));
    for (const { record, info } of records) {
      const clean = Object.fromEntries(Object.entries(record).filter(([, v]) => v !== ''));
      take(clean, info.lines, fileKind);
    }
  }
  if (errors.length) throw new IngestValidationError(errors);
  return rows;
}
