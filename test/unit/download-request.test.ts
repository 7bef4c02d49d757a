import { expect } from 'chai';
import { answerDownload } from '../../commands/export-bundles/download-request.js';

const SIZE = 1000;
const ETAG = `"${'3f'.repeat(32)}"`;
const OTHER_ETAG = `"${'a0'.repeat(32)}"`;
const WHOLE = { status: 200, start: 0, end: SIZE - 1 };

const answer = (headers: Record<string, string | string[] | undefined>) => answerDownload(headers, SIZE, ETAG);

describe('Download requests (conditions and ranges of an export file)', () => {
  describe('When no Range is sent', () => {
    it('serves the whole file', () => {
      expect(answer({})).to.deep.equal(WHOLE);
      expect(answer({ range: '' })).to.deep.equal(WHOLE);
      expect(answer({ 'if-range': ETAG })).to.deep.equal(WHOLE);
    });
  });

  describe('When one byte range is asked', () => {
    it('serves bytes=0-99 as 206 with the first hundred bytes', () => {
      expect(answer({ range: 'bytes=0-99' })).to.deep.equal({ status: 206, start: 0, end: 99 });
    });

    it('serves an open-ended range to the end of the file (a resumed download)', () => {
      expect(answer({ range: 'bytes=900-' })).to.deep.equal({ status: 206, start: 900, end: 999 });
      expect(answer({ range: 'bytes=999-' })).to.deep.equal({ status: 206, start: 999, end: 999 });
      expect(answer({ range: 'bytes=0-' })).to.deep.equal({ status: 206, start: 0, end: 999 });
    });

    it('serves a suffix range: the last bytes of the file', () => {
      expect(answer({ range: 'bytes=-100' })).to.deep.equal({ status: 206, start: 900, end: 999 });
      expect(answer({ range: 'bytes=-1' })).to.deep.equal({ status: 206, start: 999, end: 999 });
    });

    it('clips a range that runs past the end to the file', () => {
      expect(answer({ range: 'bytes=900-5000' })).to.deep.equal({ status: 206, start: 900, end: 999 });
      expect(answer({ range: 'bytes=0-999' })).to.deep.equal({ status: 206, start: 0, end: 999 });
      expect(answer({ range: 'bytes=-1000' })).to.deep.equal({ status: 206, start: 0, end: 999 });
    });

    it('uses the whole file for a suffix longer than the file (RFC 9110 §14.1.2), not 416', () => {
      expect(answer({ range: 'bytes=-1001' })).to.deep.equal({ status: 206, start: 0, end: 999 });
      expect(answer({ range: 'bytes=-5000' })).to.deep.equal({ status: 206, start: 0, end: 999 });
    });

    it('answers 416 to a range that starts at or beyond the end', () => {
      expect(answer({ range: 'bytes=1000-' })).to.deep.equal({ status: 416 });
      expect(answer({ range: 'bytes=1000-1100' })).to.deep.equal({ status: 416 });
      expect(answer({ range: 'bytes=5000-6000' })).to.deep.equal({ status: 416 });
      // A suffix of no bytes is not satisfiable either.
      expect(answer({ range: 'bytes=-0' })).to.deep.equal({ status: 416 });
    });
  });

  describe('When the Range cannot be used', () => {
    it('ignores a malformed range and serves the whole file', () => {
      for (const range of ['bytes', 'bytes=abc', 'bytes=1-x', 'bytes=--5', 'bytes=0-99;', '0-99', 'bytes=0x10-0x20']) {
        expect(answer({ range }), range).to.deep.equal(WHOLE);
      }
    });

    it('ignores a unit other than bytes and serves the whole file', () => {
      expect(answer({ range: 'items=0-5' })).to.deep.equal(WHOLE);
      expect(answer({ range: 'lines=0-99' })).to.deep.equal(WHOLE);
    });

    it('serves the whole file for several ranges that do not merge (no multipart body)', () => {
      expect(answer({ range: 'bytes=0-9,20-29' })).to.deep.equal(WHOLE);
      expect(answer({ range: 'bytes=-10,0-9' })).to.deep.equal(WHOLE);
    });

    it('merges overlapping and adjacent ranges into one 206', () => {
      expect(answer({ range: 'bytes=0-49,40-99' })).to.deep.equal({ status: 206, start: 0, end: 99 });
      expect(answer({ range: 'bytes=0-9,10-19' })).to.deep.equal({ status: 206, start: 0, end: 19 });
      expect(answer({ range: 'bytes=500-,600-700' })).to.deep.equal({ status: 206, start: 500, end: 999 });
    });

    it('serves the satisfiable one of two ranges when the other starts past the end', () => {
      expect(answer({ range: 'bytes=0-99,2000-3000' })).to.deep.equal({ status: 206, start: 0, end: 99 });
    });

    it('ignores a range that ends before it starts (invalid, RFC 9110 §14.1.1) and serves the whole file', () => {
      expect(answer({ range: 'bytes=5-2' })).to.deep.equal(WHOLE);
      expect(answer({ range: 'bytes=999-0' })).to.deep.equal(WHOLE);
    });

    it('serves at least the whole file when a suffix longer than the file comes with another range', () => {
      for (const range of ['bytes=-5000,0-9', 'bytes=0-9,-5000', 'bytes=500-509,-1001']) {
        const a = answer({ range });
        expect([200, 206], range).to.include(a.status);
        expect(a, range).to.deep.include({ start: 0, end: 999 });
      }
    });
  });

  describe('When If-None-Match is sent', () => {
    it("answers 304 when it names the file's ETag", () => {
      expect(answer({ 'if-none-match': ETAG })).to.deep.equal({ status: 304 });
    });

    it('answers 304 to the weak form of the ETag (weak comparison)', () => {
      expect(answer({ 'if-none-match': `W/${ETAG}` })).to.deep.equal({ status: 304 });
    });

    it('answers 304 when a list holds the ETag', () => {
      expect(answer({ 'if-none-match': `${OTHER_ETAG}, ${ETAG}` })).to.deep.equal({ status: 304 });
      expect(answer({ 'if-none-match': `${OTHER_ETAG},W/${ETAG}` })).to.deep.equal({ status: 304 });
    });

    it('answers 304 to *', () => {
      expect(answer({ 'if-none-match': '*' })).to.deep.equal({ status: 304 });
    });

    it("answers 304 with the request's Cache-Control: no-cache (fetch() sends it with every conditional request)", () => {
      expect(answer({ 'if-none-match': ETAG, 'cache-control': 'no-cache' })).to.deep.equal({ status: 304 });
      expect(answer({ 'if-none-match': `W/${ETAG}`, 'cache-control': 'max-age=0, no-cache', pragma: 'no-cache' })).to.deep.equal({ status: 304 });
    });

    it('answers 304 before looking at a Range', () => {
      expect(answer({ 'if-none-match': ETAG, range: 'bytes=0-99' })).to.deep.equal({ status: 304 });
      expect(answer({ 'if-none-match': ETAG, range: 'bytes=5000-' })).to.deep.equal({ status: 304 });
    });

    it('goes on to the range when it names another ETag', () => {
      expect(answer({ 'if-none-match': OTHER_ETAG })).to.deep.equal(WHOLE);
      expect(answer({ 'if-none-match': `${OTHER_ETAG}, W/${OTHER_ETAG}` })).to.deep.equal(WHOLE);
      expect(answer({ 'if-none-match': OTHER_ETAG, range: 'bytes=0-99' })).to.deep.equal({ status: 206, start: 0, end: 99 });
      // The ETag without its quotes is not the ETag.
      expect(answer({ 'if-none-match': ETAG.slice(1, -1) })).to.deep.equal(WHOLE);
    });

    it('does not answer 304 to If-Modified-Since alone (the file has no Last-Modified)', () => {
      expect(answer({ 'if-modified-since': 'Tue, 24 Nov 2026 22:30:00 GMT' })).to.deep.equal(WHOLE);
    });
  });

  describe('When If-Range guards the Range', () => {
    it('honours the range when If-Range is the ETag', () => {
      expect(answer({ 'if-range': ETAG, range: 'bytes=100-199' })).to.deep.equal({ status: 206, start: 100, end: 199 });
      expect(answer({ 'if-range': ` ${ETAG} `, range: 'bytes=100-' })).to.deep.equal({ status: 206, start: 100, end: 999 });
      expect(answer({ 'if-range': ETAG, range: 'bytes=1000-' })).to.deep.equal({ status: 416 });
    });

    it('serves the whole file when If-Range is another ETag, a weak ETag (strong comparison) or a date', () => {
      for (const ifRange of [OTHER_ETAG, `W/${ETAG}`, 'Tue, 24 Nov 2026 22:30:00 GMT']) {
        expect(answer({ 'if-range': ifRange, range: 'bytes=100-199' }), ifRange).to.deep.equal(WHOLE);
        expect(answer({ 'if-range': ifRange, range: 'bytes=5000-' }), `${ifRange}, past the end`).to.deep.equal(WHOLE);
      }
    });
  });
});
