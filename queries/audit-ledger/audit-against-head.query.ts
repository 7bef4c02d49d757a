/**
 * `scores audit --against <kept.json>`: the log held to a signed head a customer kept (docs/ledger.md,
 * "Signed heads"). The hashes alone cannot show a rewrite that recomputed every later hash; a head
 * the service signed before it can: the log's line at the head's seq must still carry its hash.
 * The lines kept with the head (a `/v1/usage/ledger` page, or `scores ledger export --json`)
 * are vouched for by it when they chain to it, and then name the first line the log rewrote.
 */
import { computeHash, GENESIS_HASH } from '../../src/domain/ledger/ledger.events.js';
import { verifySignedHead, type LedgerPublicKey, type SignedLedgerHead } from '../../src/domain/ledger/ledger-head.js';
import type { AuditDeps } from './audit-ledger.query.js';
import { invoicesStream, type InvoiceIssued } from '../../src/domain/billing/billing.events.js';
import { exportLedger, type ExportedLedgerLine } from './ledger-month.query.js';

/** A line of the log that is not what the kept head (or the chain) says. */
export interface DifferingLine {
  seq: number;
  kind: string;
  at: string;
  /** The hash the kept lines vouch for; null when none was kept for this seq. */
  kept_hash: string | null;
  log_hash: string;
}

export interface HeadAuditReport {
  account_id: string;
  ok: boolean;
  head: { seq: number; hash: string; at: string; key_id: string };
  /** Whether the head carries one of the service's signatures (retired keys included). */
  signature: 'valid' | 'invalid';
  /** The log's hash at the head's seq; null when the log has no such line. */
  log_hash: string | null;
  /** Kept lines that chain to the signed head, so that it vouches for them. */
  kept_lines: number;
  /** The first line the log rewrote, when the kept lines show it; `exact` false: it is this line or an earlier one. */
  first_differing: (DifferingLine & { exact: boolean }) | null;
  problems: string[];
}

/** What a kept file may be: a signed head, or a document holding one (`signed_head`) and lines (`entries` or `lines`). */
export function readKept(kept: unknown): { head: unknown; lines: ExportedLedgerLine[] } {
  const doc = (kept ?? {}) as { signed_head?: unknown; entries?: unknown; lines?: unknown };
  if ('statement' in doc) return { head: doc, lines: [] };
  const lines = Array.isArray(doc.entries) ? doc.entries : Array.isArray(doc.lines) ? doc.lines : [];
  return { head: doc.signed_head ?? null, lines: lines as ExportedLedgerLine[] };
}

/** The log's lines checked against a signed head and the lines kept with it. */
export async function auditAgainstHead(deps: AuditDeps & { keys: readonly LedgerPublicKey[]; kept: unknown }): Promise<HeadAuditReport> {
  const { head: unchecked, lines: keptLines } = readKept(deps.kept);
  const check = verifySignedHead(unchecked, deps.keys);
  const head = unchecked as SignedLedgerHead;
  const report: HeadAuditReport = {
    account_id: String(head?.account_id),
    ok: false,
    head: { seq: head?.seq, hash: head?.hash, at: head?.at, key_id: head?.key_id },
    signature: check.ok ? 'valid' : 'invalid',
    log_hash: null,
    kept_lines: 0,
    first_differing: null,
    problems: [],
  };
  if (!check.ok) {
    report.problems.push(`The signed head does not verify: ${check.reason}. It proves nothing about the log.`);
    return report;
  }
  const log = await exportLedger({ events: deps.events, reads: deps.reads, accountId: head.account_id });
  const vouched = vouchedLines(keptLines, head);
  report.kept_lines = vouched.size;
  report.log_hash = log[head.seq]?.hash ?? null;
  const chainBreak = firstChainBreak(log.slice(0, head.seq + 1));
  if (chainBreak !== null) report.problems.push(`The log's hash chain is broken at line ${chainBreak.seq} (${chainBreak.kind} at ${chainBreak.at}): it was altered after it was written.`);
  if (report.log_hash === null) {
    report.problems.push(`The log ends at line ${log.length - 1}, before the signed head's line ${head.seq}: lines were removed.`);
  } else if (report.log_hash !== head.hash) {
    report.first_differing = firstDiffering(log, vouched, head);
    const d = report.first_differing;
    report.problems.push(
      `Line ${head.seq} of the log has hash ${report.log_hash.slice(0, 12)}…, not the signed head's ${head.hash.slice(0, 12)}… (signed at ${head.at} by key ${head.key_id}): the ledger was rewritten. ` +
        `First rewritten line: ${d.exact ? '' : 'at or before '}${d.seq} (${d.kind} at ${d.at}).`,
    );
  }
  report.ok = report.problems.length === 0;
  return report;
}

/**
 * The kept lines the head vouches for, by seq: the line at the head's seq carries its hash, and
 * each line before it carries the `hash` its successor's `prev_hash` names, its own data hashing to it.
 */
function vouchedLines(kept: readonly ExportedLedgerLine[], head: SignedLedgerHead): Map<number, ExportedLedgerLine> {
  const bySeq = new Map(kept.filter((l) => l && typeof l === 'object').map((l) => [l.seq, l]));
  const vouched = new Map<number, ExportedLedgerLine>();
  let expected = head.hash;
  for (let seq = head.seq; seq >= 0; seq--) {
    const line = bySeq.get(seq);
    if (!line || line.hash !== expected || computeHash(line.kind, line.data as { prev_hash: string }) !== expected) break;
    vouched.set(seq, line);
    expected = line.prev_hash;
  }
  return vouched;
}

/** The lowest seq whose log hash is not the vouched one; not exact when the vouched lines stop before the log agrees. */
function firstDiffering(log: readonly ExportedLedgerLine[], vouched: Map<number, ExportedLedgerLine>, head: SignedLedgerHead): DifferingLine & { exact: boolean } {
  let seq = head.seq;
  while (vouched.has(seq - 1) && log[seq - 1]!.hash !== vouched.get(seq - 1)!.hash) seq--;
  const kept = vouched.get(seq);
  // Lines before `seq` agree when the log's previous hash is the one the vouched line chains from.
  const before = seq === 0 ? GENESIS_HASH : log[seq - 1]!.hash;
  const exact = kept !== undefined && kept.prev_hash === before;
  const line = log[seq]!;
  return { seq, kind: line.kind, at: line.at, kept_hash: kept?.hash ?? (seq === head.seq ? head.hash : null), log_hash: line.hash, exact };
}

/** The first line of the log whose hash or link does not hold (the recipe of docs/ledger.md), or null. */
function firstChainBreak(lines: readonly ExportedLedgerLine[]): ExportedLedgerLine | null {
  let prev = GENESIS_HASH;
  for (const line of lines) {
    if (line.prev_hash !== prev || computeHash(line.kind, line.data as { prev_hash: string }) !== line.hash) return line;
    prev = line.hash;
  }
  return null;
}

/** The signed heads of an account's invoices held against its log: each month's closing line must still carry the signed hash. */
export interface InvoiceHeadsReport {
  ok: boolean;
  /** Invoices carrying a signed head. */
  checked: number;
  problems: string[];
}

/**
 * `scores audit --account A` also checks the heads the service signed on A's invoices (each a
 * month's closing line): a rewrite of a line before an invoiced month's end shows there, with
 * nothing kept by the customer. A head whose signature fails is reported too.
 */
export async function auditInvoiceHeads(deps: AuditDeps & { keys: readonly LedgerPublicKey[]; accountId: string }): Promise<InvoiceHeadsReport> {
  const issued = (await deps.events.readStream(invoicesStream(deps.accountId))) as unknown as InvoiceIssued[];
  const heads = issued.flatMap((e) => (e.type === 'InvoiceIssued' && e.data.invoice.ledger_head ? [{ invoice: e.data.invoice.number, head: e.data.invoice.ledger_head }] : []));
  const report: InvoiceHeadsReport = { ok: true, checked: heads.length, problems: [] };
  if (heads.length === 0) return report;
  const log = await exportLedger({ events: deps.events, reads: deps.reads, accountId: deps.accountId });
  for (const { invoice, head } of heads) {
    const check = verifySignedHead(head, deps.keys);
    if (!check.ok) report.problems.push(`Invoice ${invoice}: its signed ledger head does not verify: ${check.reason}.`);
    else if (log[head.seq]?.hash !== head.hash) {
      report.problems.push(`Invoice ${invoice}: line ${head.seq} of the log no longer has the hash signed on it at ${head.at} (${head.hash.slice(0, 12)}…): the ledger was rewritten at or before that line.`);
    }
  }
  report.ok = report.problems.length === 0;
  return report;
}

/** Human text of an audit against a signed head. */
export function formatHeadAudit(r: HeadAuditReport): string {
  const head = `line ${r.head.seq}, signed at ${r.head.at} by key ${r.head.key_id}`;
  if (r.ok) return `Account ${r.account_id}: OK against the signed head (${head}): the log's chain ends on its hash at that line.`;
  return [`Account ${r.account_id}: DIFFERS from the signed head (${head}).`, ...r.problems.map((p) => `  - ${p}`)].join('\n');
}
