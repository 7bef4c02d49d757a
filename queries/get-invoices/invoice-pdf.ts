import PDFDocument from 'pdfkit';
import { formatUsd, monthName, type Invoice, type InvoiceLine } from '../../src/domain/billing/invoice.js';

/**
 * An invoice as a PDF: A4, the built-in Helvetica fonts (no font files), the seller, the invoice's
 * number, period, issue date, billed account, its lines and total, exactly as in the invoice's JSON
 * (no other amount is printed), and its status. A second page (and more) when the lines do not fit,
 * the table's header repeated on each.
 *
 * Deterministic: the same invoice and seller give the same bytes. pdfkit's only varying inputs are
 * the info dictionary's `CreationDate` (by default the current time) and the document `/ID`, which
 * pdfkit derives from the info dictionary given to the constructor; both are fixed here from the
 * invoice (`issued_at`), so the bytes can carry a stable ETag.
 *
 * Refuses (throws an Error, before drawing anything) an inconsistent invoice: a total that is not
 * the sum of the lines, a line whose amount is not quantity × unit price, amounts that are not whole
 * cents, a malformed period or issue instant. A customer must never receive a PDF that disagrees with
 * itself or with the JSON.
 */
export async function renderInvoicePdf(
  invoice: Invoice,
  seller: { name: string; baseUrl: string },
  /** Test-only: `compress: false` leaves the page content streams readable. */
  options: { compress?: boolean } = {},
): Promise<Buffer> {
  assertConsistent(invoice);
  const issuedAt = new Date(invoice.issued_at);

  const doc = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    bufferPages: true,
    compress: options.compress ?? true,
    lang: 'en',
    displayTitle: true,
    // Passed to the constructor (not set afterwards): pdfkit computes the document /ID from it there.
    // Its strings need no pdfText: pdfkit writes non-ASCII ones in UTF-16.
    info: {
      Title: `Invoice ${invoice.number}`,
      Author: seller.name,
      Subject: `Invoice ${invoice.number}, ${invoice.period}`,
      Creator: seller.name,
      Producer: 'PDFKit',
      CreationDate: issuedAt,
      ModDate: issuedAt,
    },
  });
  const done = collect(doc);

  drawHeader(doc, invoice, seller, issuedAt);
  drawLines(doc, invoice);
  drawLedgerHead(doc, invoice, seller.baseUrl);
  drawFooters(doc, invoice);
  doc.end();
  return done;
}

const MARGIN = 50;
const FONT = 'Helvetica';
const BOLD = 'Helvetica-Bold';
const TEXT_SIZE = 10;
const MUTED = '#555555';
const INK = '#000000';
const RULE = '#999999';
const CELL_GAP = 6;
const ROW_GAP = 4;

interface Column {
  title: string;
  width: number;
  align: 'left' | 'right';
  cell: (line: InvoiceLine) => string;
}

/** Description, quantity, unit price, amount: 495 points, the A4 width inside the margins. */
const COLUMNS: readonly Column[] = [
  { title: 'Description', width: 270, align: 'left', cell: (l) => pdfText(l.description) },
  { title: 'Quantity', width: 60, align: 'right', cell: (l) => l.quantity.toLocaleString('en-US') },
  { title: 'Unit price', width: 80, align: 'right', cell: (l) => formatUsd(l.unit_amount_cents) },
  { title: 'Amount', width: 85, align: 'right', cell: (l) => formatUsd(l.amount_cents) },
];

function assertConsistent(invoice: Invoice): void {
  const where = `invoice ${invoice.number}`;
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(invoice.period)) {
    throw new Error(`${where}: period ${JSON.stringify(invoice.period)} is not YYYY-MM`);
  }
  if (!Number.isFinite(Date.parse(invoice.issued_at))) {
    throw new Error(`${where}: issued_at ${JSON.stringify(invoice.issued_at)} is not an instant`);
  }
  if (invoice.currency !== 'usd') {
    throw new Error(`${where}: currency ${JSON.stringify(invoice.currency)} is not usd`);
  }
  let sum = 0;
  invoice.lines.forEach((line, i) => {
    for (const field of ['quantity', 'unit_amount_cents', 'amount_cents'] as const) {
      if (!Number.isSafeInteger(line[field])) {
        throw new Error(`${where}: line ${i + 1} ${field} ${line[field]} is not a whole number`);
      }
    }
    if (line.quantity * line.unit_amount_cents !== line.amount_cents) {
      throw new Error(
        `${where}: line ${i + 1} amount ${line.amount_cents} is not quantity ${line.quantity} × unit ${line.unit_amount_cents}`,
      );
    }
    sum += line.amount_cents;
  });
  if (!Number.isSafeInteger(invoice.total_cents) || invoice.total_cents !== sum) {
    throw new Error(`${where}: total_cents ${invoice.total_cents} is not the sum of its lines (${sum}); refusing to print it`);
  }
}

function drawHeader(doc: PDFKit.PDFDocument, invoice: Invoice, seller: { name: string; baseUrl: string }, issuedAt: Date): void {
  const width = contentWidth(doc);
  doc.font(BOLD).fontSize(24).fillColor(INK).text('Invoice', MARGIN, MARGIN, { width, align: 'right' });
  doc.font(BOLD).fontSize(16).text(pdfText(seller.name), MARGIN, MARGIN, { width: width * 0.6 });
  doc.font(FONT).fontSize(TEXT_SIZE).fillColor(MUTED).text(pdfText(seller.baseUrl), { width: width * 0.6 });

  const fields: [string, string][] = [
    ['Invoice number', pdfText(invoice.number)],
    ['Period', `${monthName(invoice.period)} (${invoice.period})`],
    ['Issue date', issuedAt.toISOString().slice(0, 10)],
    ['Account', pdfText(invoice.account_id)],
  ];
  if (invoice.email !== null) fields.push(['Email', pdfText(invoice.email)]);
  fields.push(['Status', statusLabel(invoice.status)]);

  let y = Math.max(doc.y, MARGIN + 30) + 24;
  const labelWidth = 100;
  for (const [label, value] of fields) {
    doc.font(BOLD).fontSize(TEXT_SIZE).fillColor(MUTED).text(label, MARGIN, y, { width: labelWidth });
    doc.font(FONT).fillColor(INK).text(value, MARGIN + labelWidth, y, { width: width - labelWidth });
    y = Math.max(y + doc.currentLineHeight(true), doc.y) + 2;
  }
  doc.y = y + 18;
}

function drawLines(doc: PDFKit.PDFDocument, invoice: Invoice): void {
  const note = 'All amounts in US dollars (USD).';
  doc.font(FONT).fontSize(TEXT_SIZE - 1);
  const noteHeight = doc.currentLineHeight(true);
  doc.font(BOLD).fontSize(TEXT_SIZE + 1);
  const totalHeight = doc.currentLineHeight(true);
  // The rule, the total and the note, kept together, and with the last line (never alone on a page).
  const closingHeight = 8 + totalHeight + 14 + noteHeight;

  let y = drawTableHeader(doc, doc.y);
  invoice.lines.forEach((line, i) => {
    const cells = COLUMNS.map((c) => c.cell(line));
    doc.font(FONT).fontSize(TEXT_SIZE);
    const height = Math.max(...cells.map((text, c) => doc.heightOfString(text, { width: COLUMNS[c]!.width - CELL_GAP })));
    const needed = i === invoice.lines.length - 1 ? height + ROW_GAP + closingHeight : height;
    if (y + needed > bottom(doc)) {
      y = continueOnNewPage(doc, invoice);
    }
    drawRow(doc, y, cells, FONT);
    y += height + ROW_GAP;
  });

  if (y + closingHeight > bottom(doc)) {
    y = continueOnNewPage(doc, invoice); // only with no lines at all, or a last line taller than a page
  }
  rule(doc, y, 1);
  y += 8;
  const x = MARGIN + COLUMNS[0]!.width + COLUMNS[1]!.width;
  doc.font(BOLD).fontSize(TEXT_SIZE + 1).fillColor(INK).text('Total', x, y, { width: COLUMNS[2]!.width - CELL_GAP, align: 'right' });
  doc.text(formatUsd(invoice.total_cents), x + COLUMNS[2]!.width, y, { width: COLUMNS[3]!.width, align: 'right' });
  y += totalHeight + 14;
  doc.font(FONT).fontSize(TEXT_SIZE - 1).fillColor(MUTED).text(note, MARGIN, y, { width: contentWidth(doc) });
}

/**
 * The signed head of the ledger the invoice bills (its month's closing line), in full, so that a
 * customer holding only the PDF can hold the operator to the ledger up to that line.
 */
function drawLedgerHead(doc: PDFKit.PDFDocument, invoice: Invoice, baseUrl: string): void {
  const h = invoice.ledger_head;
  if (!h) return;
  const text = [
    `Signed ledger head (${h.statement}, ${h.alg}; keys at ${baseUrl}/.well-known/scores-ledger-keys.json):`,
    `account ${h.account_id}, line ${h.seq}, hash ${h.hash}, at ${h.at}, key ${h.key_id}`,
    `signature ${h.signature}`,
  ].map(pdfText);
  doc.moveDown(1.5);
  doc.font(FONT).fontSize(TEXT_SIZE - 2).fillColor(MUTED).text(text.join('\n'), MARGIN, doc.y, { width: contentWidth(doc) });
}

function continueOnNewPage(doc: PDFKit.PDFDocument, invoice: Invoice): number {
  doc.addPage();
  doc.font(FONT).fontSize(TEXT_SIZE).fillColor(MUTED).text(`Invoice ${pdfText(invoice.number)} (continued)`, MARGIN, MARGIN, {
    width: contentWidth(doc),
  });
  return drawTableHeader(doc, doc.y + 12);
}

function drawTableHeader(doc: PDFKit.PDFDocument, y: number): number {
  doc.font(BOLD).fontSize(TEXT_SIZE);
  drawRow(doc, y, COLUMNS.map((c) => c.title), BOLD);
  const below = y + doc.currentLineHeight(true) + 3;
  rule(doc, below, 0.75);
  return below + 6;
}

function drawRow(doc: PDFKit.PDFDocument, y: number, cells: string[], font: string): void {
  let x = MARGIN;
  COLUMNS.forEach((column, i) => {
    // The gap sits on the left of a right-aligned cell and on the right of a left-aligned one.
    const cellX = column.align === 'right' ? x + CELL_GAP : x;
    doc.font(font).fontSize(TEXT_SIZE).fillColor(INK).text(cells[i]!, cellX, y, { width: column.width - CELL_GAP, align: column.align });
    x += column.width;
  });
}

/** Page n of m, written once every page exists, inside the bottom margin. */
function drawFooters(doc: PDFKit.PDFDocument, invoice: Invoice): void {
  const { start, count } = doc.bufferedPageRange();
  for (let i = start; i < start + count; i++) {
    doc.switchToPage(i);
    const margins = doc.page.margins;
    const savedBottom = margins.bottom;
    margins.bottom = 0; // or pdfkit starts a new page for text below the bottom margin
    doc.font(FONT).fontSize(8).fillColor(MUTED).text(
      `Invoice ${pdfText(invoice.number)} - page ${i - start + 1} of ${count}`,
      MARGIN,
      doc.page.height - MARGIN + 16,
      { width: contentWidth(doc), align: 'center', lineBreak: false },
    );
    margins.bottom = savedBottom;
  }
}

function rule(doc: PDFKit.PDFDocument, y: number, width: number): void {
  doc.moveTo(MARGIN, y).lineTo(MARGIN + contentWidth(doc), y).lineWidth(width).strokeColor(RULE).stroke();
}

function contentWidth(doc: PDFKit.PDFDocument): number {
  return doc.page.width - 2 * MARGIN;
}

function bottom(doc: PDFKit.PDFDocument): number {
  return doc.page.height - MARGIN;
}

function statusLabel(status: Invoice['status']): string {
  switch (status) {
    case 'paid':
      return 'Paid';
    case 'open':
      return 'Due (being collected)';
  }
}

/** Characters the standard fonts can draw without a WinAnsi glyph, spelled out. */
const SPELLED: Record<string, string> = {
  '→': '->',
  '←': '<-',
  '↔': '<->',
  '⇒': '=>',
  '≤': '<=',
  '≥': '>=',
  '≠': '!=',
  '−': '-',
  '‐': '-',
  '‑': '-',
  '′': "'",
  '″': '"',
};

/** The Unicode characters WinAnsiEncoding places in 0x80–0x9F (the rest of its range is Latin-1). */
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

function drawable(char: string): boolean {
  const code = char.codePointAt(0)!;
  return (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRA.has(char);
}

/**
 * Text the built-in fonts can show. pdfkit encodes their text in WinAnsi and, for a character
 * outside it, writes a multi-byte code that a viewer reads as other characters (`→` shows as `!’`),
 * and a control character as an odd-length hex code: such characters are spelled out (`→` as `->`),
 * stripped of their accent, or shown as `?`; control characters become spaces.
 */
function pdfText(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (drawable(char)) out += char;
    else if (code < 0x20 || (code >= 0x7f && code < 0xa0)) out += ' ';
    else if (SPELLED[char] !== undefined) out += SPELLED[char];
    else {
      const bare = char.normalize('NFKD').replace(/\p{M}/gu, '');
      out += bare !== '' && [...bare].every(drawable) ? bare : '?';
    }
  }
  return out;
}

function collect(doc: PDFKit.PDFDocument): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
}
