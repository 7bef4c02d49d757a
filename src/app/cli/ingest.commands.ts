import { Option, type Command } from 'commander';
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { ingestRows } from '../../../commands/ingest/ingest.handler.js';
import { parseIngestFile } from '../../../commands/ingest/ingest.parser.js';
import { INGEST_KINDS, type IngestKind } from '../../../commands/ingest/ingest.schema.js';
import { CliError } from './cli-errors.js';
import { printer, withServices } from './command-kit.js';

/** `scores ingest <file>`: a file of scores or reference data, all rows or none. */
export function addIngestCommand(program: Command): void {
  program
    .command('ingest')
    .description('Ingest a CSV or JSONL file of scores or reference data (all rows or none)')
    .argument('<file>', 'path to a .csv or .jsonl file')
    .addOption(new Option('--type <kind>', 'row type when rows carry no "type" and the CSV header does not tell').choices(INGEST_KINDS))
    .addOption(new Option('--format <format>', 'file format (default: from the extension)').choices(['csv', 'jsonl']))
    .option('--json', 'machine-readable output')
    .action(async (file: string, opts: { type?: IngestKind; format?: 'csv' | 'jsonl'; json?: boolean }) => {
      const out = printer(Boolean(opts.json));
      const format = opts.format ?? (['.jsonl', '.ndjson', '.json'].includes(extname(file).toLowerCase()) ? 'jsonl' : 'csv');
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new CliError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message}`, 'file_unreadable');
      }
      const rows = parseIngestFile(text, format, opts.type ?? null);
      await withServices(async (s) => {
        const result = await ingestRows(s.events, s.clock, rows);
        out(
          `ingested ${result.rows} rows: ${result.written} written, ${result.unchanged} unchanged (${result.events} events in ${result.streams} streams)`,
          result,
        );
      });
    });
}
