/**
 * The text of a PDF as pdfkit writes it, for tests: no PDF library, only what a reader of the
 * file sees. Each content stream is read (inflated when its dictionary says `/FlateDecode`), and
 * the strings of its text-showing operators are decoded: `<hex> Tj`, `(literal) Tj` and the
 * `[<hex> kern <hex> …] TJ` arrays pdfkit writes for the standard fonts (WinAnsi bytes, so
 * windows-1252). One line per operator, in the order drawn.
 */
import { inflateSync } from 'node:zlib';

const winAnsi = new TextDecoder('windows-1252');

/** The bytes of every stream of the file, inflated when it is FlateDecode (undecodable ones skipped). */
function streams(pdf: Buffer): Buffer[] {
  const text = pdf.toString('latin1');
  const out: Buffer[] = [];
  const marker = /stream\r?\n/g;
  let m: RegExpExecArray | null;
  while ((m = marker.exec(text)) !== null) {
    if (text.slice(m.index - 3, m.index) === 'end') continue;
    const dictStart = text.lastIndexOf('obj', m.index);
    const dict = text.slice(dictStart, m.index);
    const start = m.index + m[0].length;
    const length = /\/Length (\d+)(?!\s+\d+\s+R)/.exec(dict);
    const end = length ? start + Number(length[1]) : text.indexOf('endstream', start);
    if (end < start) continue;
    const raw = pdf.subarray(start, end);
    marker.lastIndex = end;
    if (!/\/FlateDecode/.test(dict)) {
      out.push(raw);
      continue;
    }
    try {
      out.push(inflateSync(raw));
    } catch {
      // not a stream this reader needs (an image, a font): its text is not page text
    }
  }
  return out;
}

/** A PDF literal string's body (between its parentheses) as bytes, escapes resolved. */
function literalBytes(body: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      bytes.push(c.charCodeAt(0) & 0xff);
      continue;
    }
    const next = body[++i] ?? '';
    const simple: Record<string, number> = { n: 10, r: 13, t: 9, b: 8, f: 12, '(': 40, ')': 41, '\\': 92 };
    if (simple[next] !== undefined) bytes.push(simple[next]);
    else if (/[0-7]/.test(next)) {
      let octal = next;
      while (octal.length < 3 && /[0-7]/.test(body[i + 1] ?? '')) octal += body[++i];
      bytes.push(parseInt(octal, 8) & 0xff);
    }
    // a backslash before an end of line continues the string: nothing to add
  }
  return Buffer.from(bytes);
}

/** The strings of one `Tj` operand or `TJ` array, decoded and joined (kerning numbers dropped). */
function shown(operand: string): string {
  let out = '';
  for (const s of operand.matchAll(/<([0-9A-Fa-f\s]*)>|\(((?:\\.|[^\\)])*)\)/g)) {
    const bytes = s[1] !== undefined ? Buffer.from(s[1].replace(/\s+/g, ''), 'hex') : literalBytes(s[2] ?? '');
    out += winAnsi.decode(bytes);
  }
  return out;
}

/** The text a PDF draws, one line per text-showing operator. */
export function pdfText(pdf: Buffer): string {
  const lines: string[] = [];
  const operators = /(\[(?:<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\)|[-+\d.\s])*\])\s*TJ|(<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\))\s*Tj/g;
  for (const stream of streams(pdf)) {
    const content = stream.toString('latin1');
    for (const op of content.matchAll(operators)) lines.push(shown(op[1] ?? op[2] ?? ''));
  }
  return lines.join('\n');
}
