import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { createLogger, type LogOutput } from '../../src/app/logger.js';

/** A stream the logger writes to, as a terminal (isTTY) or a pipe, and what it received. */
function output(isTTY: boolean): { out: LogOutput; text: () => string } {
  const out = Object.assign(new PassThrough(), { isTTY });
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  return { out, text: () => text };
}
// eslint-disable-next-line no-control-regex
const plain = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '');
const ACCESS = { req_id: 'req_1', method: 'GET', route: '/v1/scores/:ticker', status: 200, ms: 3.1, key_prefix: 'sk_live_abcdef' };

describe('The console logger (src/app/logger.ts)', () => {
  it('on a terminal writes one readable line per entry: time, level, the access line in words, the other fields compact', async () => {
    const { out, text } = output(true);
    const log = createLogger('info', out);
    log.info(ACCESS, 'request');
    log.info({ appends: 3, status: 'kept' }, 'demo history written');
    log.debug('not at info');
    await new Promise((r) => setImmediate(r));
    const lines = plain(text()).split('\n').filter(Boolean);
    expect(lines).to.have.length(2);
    expect(lines[0]).to.match(/^\[\d\d:\d\d:\d\d\] INFO: GET \/v1\/scores\/:ticker 200 3\.1 ms \{"req_id":"req_1","key_prefix":"sk_live_abcdef"\}$/);
    // Another entry keeps every field, `status` included: only the access line says them in words.
    expect(lines[1]).to.match(/^\[\d\d:\d\d:\d\d\] INFO: demo history written \{"appends":3,"status":"kept"\}$/);
    for (const line of lines) expect(() => JSON.parse(line) as unknown).to.throw();
  });

  it('anywhere else writes JSON lines, one object per entry', async () => {
    const { out, text } = output(false);
    const log = createLogger('info', out);
    log.info(ACCESS, 'request');
    log.warn({ appends: 3 }, 'demo history written');
    await new Promise((r) => setImmediate(r));
    const lines = text().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).to.have.length(2);
    expect(lines[0]).to.include({ level: 30, msg: 'request', ...ACCESS });
    expect(lines[1]).to.include({ level: 40, msg: 'demo history written', appends: 3 });
  });
});
