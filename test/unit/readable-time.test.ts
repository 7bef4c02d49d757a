import { expect } from 'chai';
import { day, instant, readableInstant } from '../../src/app/http/pages/time.js';

describe('Readable dates and instants on the pages (src/app/http/pages/time.ts)', () => {
  it('writes an instant in UTC as a reader reads it', () => {
    expect(readableInstant('2026-12-01T00:00:00.000Z')).to.equal('1 Dec 2026, 00:00 UTC');
    expect(readableInstant('2026-11-27T23:59:59+02:00')).to.equal('27 Nov 2026, 21:59 UTC');
  });

  it('puts the exact UTC instant in the <time> element’s datetime and title', () => {
    expect(instant('2026-12-01T00:00:00.000Z').value).to.equal(
      '<time datetime="2026-12-01T00:00:00.000Z" title="2026-12-01T00:00:00.000Z">1 Dec 2026, 00:00 UTC</time>',
    );
    expect(day('2019-04-10').value).to.equal('<time datetime="2019-04-10" title="2019-04-10 (UTC)">10 Apr 2019</time>');
  });

  it('leaves text that is not a date as it is, escaped', () => {
    expect(instant('<soon>').value).to.equal('&lt;soon&gt;');
    expect(day('never').value).to.equal('never');
  });
});
