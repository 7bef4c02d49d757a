import { expect } from 'chai';
import { randomIds } from '../../src/core/ids.port.js';
import { newRequestId } from '../../src/web/response-headers.js';

const bytesOf = (id: string) => Buffer.from(id.slice('req_'.length), 'base64url');

describe('Request ids', () => {
  const ids = randomIds();

  it('are `req_` and 16 base64url characters (12 bytes), as the document declares', () => {
    for (let i = 0; i < 50; i++) expect(newRequestId(ids)).to.match(/^req_[A-Za-z0-9_-]{16}$/);
  });

  it('begin with the millisecond they were made (6 bytes, big-endian), then 6 random bytes', () => {
    const at = Date.parse('2026-11-30T04:00:00.123Z');
    const a = newRequestId(ids, at);
    const b = newRequestId(ids, at);
    expect(bytesOf(a).readUIntBE(0, 6)).to.equal(at);
    expect(a, 'two ids of one millisecond differ').to.not.equal(b);
    expect(bytesOf(a).subarray(0, 6)).to.deep.equal(bytesOf(b).subarray(0, 6));
  });

  it('sort by time: an id made a millisecond later is greater, byte by byte (the request log indexes them so)', () => {
    const at = Date.parse('2026-11-30T04:00:00Z');
    const ordered = [0, 1, 2, 255, 256, 65_536, 86_400_000].map((d) => bytesOf(newRequestId(ids, at + d)));
    for (let i = 1; i < ordered.length; i++) expect(Buffer.compare(ordered[i - 1]!, ordered[i]!)).to.equal(-1);
  });
});
