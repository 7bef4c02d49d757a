import { z } from 'zod';
import { readInstant } from '../../src/domain/instants.js';
import { isDateString } from '../../src/domain/trading-calendar.js';
import { SIGNAL_ALERT_TYPES, THEME_RELATIONSHIPS } from '../../src/domain/scores/reference.events.js';

const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
  .refine(isDateString, 'is not a calendar date');
/** An instant read by the service's one instant reader: a time without a zone is refused, as in a query and in SCORES_NOW. */
const instant = z.string().transform((s, ctx) => {
  const read = readInstant(s);
  if (read.ok) return read.iso;
  ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be ${read.reason}` });
  return z.NEVER;
});
const relationship = z.enum(THEME_RELATIONSHIPS, { errorMap: () => ({ message: `must be one of ${THEME_RELATIONSHIPS.join(', ')}` }) });
const ticker = z
  .string()
  .trim()
  .min(1)
  .max(12, 'is longer than 12 characters')
  .regex(/^[A-Za-z0-9.-]+$/, 'may hold only letters, digits, "." and "-"')
  .transform((s) => s.toUpperCase());
/**
 * A number: a JSON number, or (CSV) a decimal numeral, finite. Nothing is coerced: `null`, `true`,
 * `""`, `[5]` or `"0x10"` is refused, never read as 0, 1, 5 or 16.
 */
const number = z
  .union([z.number(), z.string().trim().regex(/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/).transform(Number)], {
    errorMap: () => ({ message: 'must be a number' }),
  })
  .pipe(z.number().finite('must be a finite number'));
const wholeNumber = number.pipe(z.number().int('must be a whole number').safe('is too large'));
const score = number.pipe(z.number().min(0).max(100));
const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0', '']).transform((s) => s === 'true' || s === '1')]);
/** CSV cells carry lists as `a;b;c` (an empty cell: none); JSON carries arrays. */
const list = (item: z.ZodTypeAny) =>
  z.preprocess((v) => (v === undefined ? [] : typeof v === 'string' ? (v.trim() === '' ? [] : v.split(';').map((x) => x.trim())) : v), z.array(item));

export const ingestSchemas = {
  score: z.object({
    ticker,
    date,
    main_street: score,
    wall_street: score,
    estimated: bool.optional().default(false),
    /** When the row was (first) written; defaults to the ingest time. */
    published_at: instant.optional(),
  }),
  ticker: z.object({
    symbol: ticker,
    company: z.string().trim().min(1),
    sector: z.string().trim().min(1),
    size_rank: wholeNumber.pipe(z.number().positive().max(100_000)),
  }),
  price: z.object({ ticker, date, close: number.pipe(z.number().positive()) }),
  visits: z.object({ ticker, date, visits: wholeNumber.pipe(z.number().nonnegative()) }),
  earnings: z.object({ ticker, date }),
  theme: z.object({
    slug: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be lowercase letters, digits and dashes'),
    name: z.string().min(1),
    description: z.string().default(''),
    strength: number.pipe(z.number().min(0).max(100)),
    /** CSV: `AAPL:core;TSM:supplier`. */
    constituents: z.preprocess(
      (v, ctx) => {
        // An empty CSV cell: no constituents.
        if (v === undefined) return [];
        if (typeof v !== 'string') return v;
        return v
          .split(';')
          .filter((x) => x.trim())
          .map((pair) => {
            const [t, rel] = pair.split(':').map((x) => x.trim());
            if (!t || !rel) ctx.addIssue({ code: 'custom', message: `constituent "${pair}" must be TICKER:relationship` });
            return { ticker: t ?? '', relationship: rel ?? '' };
          });
      },
      // One schema for both forms, so a bad relationship is named, not a union's "Invalid input".
      z.array(z.object({ ticker, relationship })),
    ),
  }),
  signal: z.object({
    id: wholeNumber.pipe(z.number().positive()),
    alert_type: z.enum(SIGNAL_ALERT_TYPES, { errorMap: () => ({ message: `must be one of ${SIGNAL_ALERT_TYPES.join(', ')}` }) }),
    content: z.string().min(1),
    tickers: list(ticker),
    themes: list(z.string()),
    created_at: instant,
  }),
} as const;

export type IngestKind = keyof typeof ingestSchemas;
export const INGEST_KINDS = Object.keys(ingestSchemas) as IngestKind[];

export type IngestRow = {
  [K in IngestKind]: { kind: K; line: number; value: z.output<(typeof ingestSchemas)[K]> };
}[IngestKind];

/** A file's kind when rows carry no `type`: recognised by its columns. */
export function kindFromColumns(columns: readonly string[]): IngestKind | null {
  const has = (...c: string[]) => c.every((x) => columns.includes(x));
  if (has('main_street', 'wall_street')) return 'score';
  if (has('symbol', 'company')) return 'ticker';
  if (has('close')) return 'price';
  if (has('visits')) return 'visits';
  if (has('slug', 'constituents')) return 'theme';
  if (has('alert_type', 'content')) return 'signal';
  if (has('ticker', 'date') && columns.length === 2) return 'earnings';
  return null;
}
