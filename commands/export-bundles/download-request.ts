/**
 * What a download request asks of a file, by RFC 9110: its conditions (`If-None-Match`, with
 * `If-Range` guarding a `Range`) and its byte range. Parsing is `fresh` and `range-parser`
 * (express's own); the answer is one of four.
 */
import fresh from 'fresh';
import parseRange from 'range-parser';

export type DownloadAnswer =
  /** The client's copy is current. */
  | { status: 304 }
  /** The whole file: no Range, one that does not parse, several ranges, or an If-Range for another version. */
  | { status: 200; start: 0; end: number }
  /** One satisfiable range (a range past the end is clipped to it), `end` inclusive. */
  | { status: 206; start: number; end: number }
  /** A range that starts at or beyond the end of the file. */
  | { status: 416 };

export function answerDownload(headers: Record<string, string | string[] | undefined>, size: number, etag: string): DownloadAnswer {
  // Only the validator: `fresh` would also honour a request's `Cache-Control: no-cache` (RFC 2616's
  // reload), which fetch() adds to every conditional request, so no fetch client would get a 304.
  if (headers['if-none-match'] !== undefined && fresh({ 'if-none-match': headers['if-none-match'] }, { etag })) return { status: 304 };
  const whole = { status: 200 as const, start: 0 as const, end: size - 1 };
  const range = headers['range'];
  if (typeof range !== 'string' || range === '') return whole;
  // If-Range with a date (or another ETag) means the client's partial copy may be of another file.
  const ifRange = headers['if-range'];
  if (typeof ifRange === 'string' && ifRange.trim() !== etag) return whole;
  const ranges = parseRange(size, wholeSuffixes(range, size), { combine: true });
  if (ranges === -1) return unsatisfiable(range, whole);
  // Malformed, or not in bytes: ignored, as RFC 9110 lets a server do. Several disjoint ranges would
  // need a multipart/byteranges body: the whole file is served instead (also allowed).
  if (ranges === -2 || ranges.type !== 'bytes' || ranges.length !== 1) return whole;
  return { status: 206, start: ranges[0]!.start, end: ranges[0]!.end };
}

/**
 * A suffix longer than the file (`bytes=-N`, N >= size) means the whole file (RFC 9110 14.1.2);
 * range-parser would drop it (or call it unsatisfiable), so it is given as `0-`.
 */
function wholeSuffixes(header: string, size: number): string {
  const eq = header.indexOf('=');
  if (eq < 0) return header;
  const specs = header.slice(eq + 1).split(',').map((s) => {
    const m = /^\s*-(\d+)\s*$/.exec(s);
    return m && Number(m[1]) >= size && Number(m[1]) > 0 ? '0-' : s;
  });
  return `${header.slice(0, eq + 1)}${specs.join(',')}`;
}

/**
 * range-parser calls unsatisfiable a range ending before it starts (`bytes=5-2`), which RFC 9110
 * calls invalid: the Range is then ignored. Only ranges that all start at or beyond the end are 416.
 */
function unsatisfiable(header: string, whole: DownloadAnswer): DownloadAnswer {
  const specs = header.slice(header.indexOf('=') + 1).split(',').map((s) => s.trim());
  const backwards = (s: string) => {
    const m = /^(\d+)-(\d+)$/.exec(s);
    return m !== null && Number(m[1]) > Number(m[2]);
  };
  return specs.some(backwards) ? whole : { status: 416 };
}
