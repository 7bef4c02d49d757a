import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { renderInvoicePdf } from '../../queries/get-invoices/invoice-pdf.js';
import { headSigner } from '../../src/domain/ledger/ledger-head.js';
import { formatUsd, type Invoice, type InvoiceLine } from '../../src/domain/billing/invoice.js';

const SELLER = { name: 'Scores API', baseUrl: 'https://scores.example.com' };

const LONG =
  'Overage: 37,000 credits beyond the monthly allowance at $0.50 per 1,000 credits, billed in whole blocks of 1,000 credits for every day of the month';

function line(kind: InvoiceLine['kind'], description: string, quantity: number, unit: number): InvoiceLine {
  return { kind, description, quantity, unit_amount_cents: unit, amount_cents: quantity * unit };
}

function invoiceOf(lines: InvoiceLine[], over: Partial<Invoice> = {}): Invoice {
  return {
    number: 'ACC1A2B3C-0007',
    account_id: 'acc_1a2b3c',
    email: 'ops@example.com',
    period: '2026-11',
    issued_at: '2026-12-01T00:05:00.000Z',
    currency: 'usd',
    lines,
    total_cents: lines.reduce((sum, l) => sum + l.amount_cents, 0),
    status: 'paid',
    ...over,
  };
}

const LINES: InvoiceLine[] = [
  line('plan', 'Builder plan, November 2026', 1, 9_900),
  line('proration', 'Upgrade Hobbyist to Builder, 21 of 30 days from 2026-11-10', 1, 5_600),
  line('pro', 'Pro membership, November 2026', 1, 900),
  line('pack', 'Credit pack: 100,000 credits', 2, 4_000),
  line('overage', LONG, 37, 50),
];
const INVOICE = invoiceOf(LINES);

// ---- A reader for what pdfkit writes, enough for these tests -----------------------------------
// An uncompressed pdfkit file (PDF 1.3, no object streams) is a list of `N 0 obj ... endobj`; the
// page tree's /Kids lists the pages in order, each page's /Contents is a stream of operators, and
// text in the built-in fonts is drawn by `[<hex> kern <hex> ...] TJ`, the hex being WinAnsi
// (windows-1252) bytes. Each TJ is one line of text as laid out.

/** WinAnsi is Latin-1 but for 0x80–0x9F (Node 20's TextDecoder('windows-1252') decodes Latin-1). */
const WIN_ANSI_80_9F = '€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008dŽ\u008f\u0090‘’“”•–—˜™š›œ\u009džŸ';

function winAnsi(bytes: Buffer): string {
  return [...bytes].map((b) => (b >= 0x80 && b <= 0x9f ? WIN_ANSI_80_9F[b - 0x80]! : String.fromCharCode(b))).join('');
}

function objects(pdf: Buffer): Map<number, string> {
  const found = new Map<number, string>();
  for (const m of pdf.toString('latin1').matchAll(/(\d+) 0 obj\n([\s\S]*?)\nendobj/g)) {
    found.set(Number(m[1]), m[2]!);
  }
  return found;
}

/** The lines of text of each page, in page order. */
function pagesText(pdf: Buffer): string[][] {
  const objs = objects(pdf);
  const tree = [...objs.values()].find((body) => body.includes('/Type /Pages'))!;
  const kids = [.../\/Kids \[([^\]]*)\]/.exec(tree)![1]!.matchAll(/(\d+) 0 R/g)].map((m) => Number(m[1]));
  return kids.map((id) => {
    const page = objs.get(id)!;
    const contents = Number(/\/Contents (\d+) 0 R/.exec(page)![1]);
    const body = objs.get(contents)!;
    expect(body, 'content stream left uncompressed').not.to.include('/FlateDecode');
    const stream = body.slice(body.indexOf('stream\n') + 7, body.lastIndexOf('\nendstream'));
    return [...stream.matchAll(/\[([^\]]*)\] TJ/g)].map((tj) =>
      [...tj[1]!.matchAll(/<([0-9a-fA-F]*)>/g)].map((hex) => winAnsi(Buffer.from(hex[1]!, 'hex'))).join(''),
    );
  });
}

/** All the text, whitespace collapsed: a phrase wrapped over lines reads as one. */
function flat(pages: string[][]): string {
  return pages.flat().join(' ').replace(/\s+/g, ' ');
}

function pageCount(pdf: Buffer): number {
  return pdf.toString('latin1').match(/\/Type \/Page(?!s)\b/g)?.length ?? 0;
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

// ------------------------------------------------------------------------------------------------

describe('Invoice PDF', () => {
  it('is a PDF: starts with %PDF- and ends with %%EOF', async () => {
    const pdf = await renderInvoicePdf(INVOICE, SELLER);
    expect(Buffer.isBuffer(pdf)).to.equal(true);
    expect(pdf.subarray(0, 5).toString('latin1')).to.equal('%PDF-');
    expect(pdf.toString('latin1').trimEnd().endsWith('%%EOF')).to.equal(true);
  });

  it('gives the same bytes for the same invoice, compressed or not, its dates the issue instant', async () => {
    const [a, b] = [await renderInvoicePdf(INVOICE, SELLER), await renderInvoicePdf(structuredClone(INVOICE), { ...SELLER })];
    expect(a.equals(b)).to.equal(true);
    expect(a.toString('latin1')).to.include('/FlateDecode');
    const [c, d] = [await renderInvoicePdf(INVOICE, SELLER, { compress: false }), await renderInvoicePdf(INVOICE, SELLER, { compress: false })];
    expect(c.equals(d)).to.equal(true);
    const raw = c.toString('latin1');
    expect(raw).to.include('(D:20261201000500Z)');
    expect(raw.match(/\(D:\d{14}Z\)/g)).to.deep.equal(['(D:20261201000500Z)', '(D:20261201000500Z)']); // CreationDate, ModDate
    // Another invoice, another document ID.
    const other = await renderInvoicePdf(invoiceOf(LINES, { number: 'ACC1A2B3C-0008' }), SELLER);
    const id = (pdf: Buffer) => /\/ID \[<([0-9a-f]+)>/.exec(pdf.toString('latin1'))![1];
    expect(id(other)).not.to.equal(id(a));
  });

  it('shows the seller, the number, the period, the issue date, the account, every line, the total and Paid', async () => {
    const text = flat(pagesText(await renderInvoicePdf(INVOICE, SELLER, { compress: false })));
    for (const expected of [
      'Invoice Scores API https://scores.example.com',
      'Invoice number ACC1A2B3C-0007',
      'Period November 2026 (2026-11)',
      'Issue date 2026-12-01',
      'Account acc_1a2b3c',
      'Email ops@example.com',
      'Status Paid',
      'Description Quantity Unit price Amount',
    ]) {
      expect(text).to.include(expected);
    }
    // Each row reads description, quantity, unit price, amount (a wrapped description's lines first).
    for (const l of LINES) {
      expect(text).to.include(`${l.description} ${l.quantity} ${formatUsd(l.unit_amount_cents)} ${formatUsd(l.amount_cents)}`);
    }
    expect(formatUsd(INVOICE.total_cents)).to.equal('$262.50');
    expect(text).to.include(`Total ${formatUsd(INVOICE.total_cents)}`);
  });

  it('prints no amount but those of the lines and the total', async () => {
    const text = flat(pagesText(await renderInvoicePdf(INVOICE, SELLER, { compress: false })));
    const printed = new Set(text.match(/-?\$[\d,]+\.\d\d/g));
    const allowed = new Set([
      ...LINES.flatMap((l) => [formatUsd(l.unit_amount_cents), formatUsd(l.amount_cents)]),
      formatUsd(INVOICE.total_cents),
      '$0.50', // inside the long description
    ]);
    expect([...printed].filter((amount) => !allowed.has(amount))).to.deep.equal([]);
    expect(printed.has(formatUsd(INVOICE.total_cents))).to.equal(true);
  });

  it('wraps a long description over several lines of its column', async () => {
    const lines = pagesText(await renderInvoicePdf(INVOICE, SELLER, { compress: false })).flat();
    expect(lines.some((l) => l.includes(LONG))).to.equal(false);
    const first = lines.findIndex((l) => l.startsWith('Overage: 37,000 credits'));
    expect(first).to.be.greaterThan(-1);
    expect(lines.slice(first, first + 4).join(' ').replace(/\s+/g, ' ')).to.include(LONG);
  });

  it('puts 60 lines on more than one page, each page numbered, the total once on the last', async () => {
    const lines = Array.from({ length: 60 }, (_, i) => line('pack', `Credit pack ${i + 1}, 10,000 credits`, 1, 500 + i));
    const invoice = invoiceOf(lines);
    const pdf = await renderInvoicePdf(invoice, SELLER, { compress: false });
    const pages = pagesText(pdf);
    expect(pageCount(pdf)).to.be.greaterThan(1);
    expect(pages).to.have.length(pageCount(pdf));
    pages.forEach((page, i) => expect(page).to.include(`Invoice ACC1A2B3C-0007 - page ${i + 1} of ${pages.length}`));
    const text = flat(pages);
    for (const l of lines) {
      expect(text).to.include(`${l.description} 1 ${formatUsd(l.unit_amount_cents)} ${formatUsd(l.amount_cents)}`);
    }
    const total = formatUsd(invoice.total_cents);
    expect(pages.map((page) => page.filter((l) => l === total).length)).to.deep.equal([...pages.slice(1).map(() => 0), 1]);
    // And the compressed output has as many pages.
    expect(pageCount(await renderInvoicePdf(invoice, SELLER))).to.equal(pages.length);
  });

  it('prints the signed ledger head the invoice carries, in full, and none on an invoice without one', async () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const head = headSigner(privateKey).sign({ account_id: 'acc_1a2b3c', seq: 4_812, hash: 'c0ffee'.padEnd(64, '7'), at: INVOICE.issued_at });
    const text = flat(pagesText(await renderInvoicePdf(invoiceOf(LINES, { ledger_head: head }), SELLER, { compress: false })));
    expect(text).to.include('Signed ledger head (scores-ledger-head:v1, Ed25519; keys at https://scores.example.com/.well-known/scores-ledger-keys.json)');
    expect(text).to.include(`account acc_1a2b3c, line 4812, hash ${head.hash}, at ${head.at}, key ${head.key_id}`);
    expect(text).to.include(`signature ${head.signature}`);
    expect(flat(pagesText(await renderInvoicePdf(INVOICE, SELLER, { compress: false })))).not.to.include('Signed ledger head');
  });

  it('leaves the email out when the account has none', async () => {
    const text = flat(pagesText(await renderInvoicePdf(invoiceOf(LINES, { email: null }), SELLER, { compress: false })));
    expect(text).not.to.include('Email');
    expect(text).not.to.include('null');
    expect(text).to.include('acc_1a2b3c');
  });

  it('spells out characters the built-in fonts cannot draw, and keeps those they can', async () => {
    // billMonth writes an upgrade as `Upgrade Free → Hobbyist`: WinAnsi has no arrow.
    const lines = [line('proration', 'Upgrade Free → Hobbyist, 21 of 30 days – Café Zoë', 1, 1_330)];
    const text = flat(pagesText(await renderInvoicePdf(invoiceOf(lines), SELLER, { compress: false })));
    expect(text).to.include('Upgrade Free -> Hobbyist, 21 of 30 days – Café Zoë');
  });

  it('refuses an invoice whose total is not the sum of its lines', async () => {
    const err = await rejection(renderInvoicePdf(invoiceOf(LINES, { total_cents: INVOICE.total_cents + 1 }), SELLER));
    expect(err).to.be.instanceOf(Error);
    expect(err.message).to.match(/total_cents 26251 is not the sum of its lines \(26250\)/);
  });

  it('refuses a line whose amount is not quantity × unit price, or not whole cents', async () => {
    const bad = { ...LINES[3]!, amount_cents: 7_999 };
    const err = await rejection(renderInvoicePdf(invoiceOf([LINES[0]!, bad]), SELLER));
    expect(err.message).to.match(/line 2 amount 7999 is not quantity 2 × unit 4000/);
    const fractional = line('overage', 'Overage', 3, 33.5);
    expect((await rejection(renderInvoicePdf(invoiceOf([fractional]), SELLER))).message).to.match(/not a whole number/);
  });
});
