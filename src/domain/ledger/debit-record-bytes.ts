import type { DebitRecord } from './debit-record.js';

/**
 * A debit record (src/domain/ledger/debit-record.ts) as the bytes of one `bytea` column of the log, about
 * 100 of them: a version byte; the request id (its 12 bytes for the service's own `req_` form,
 * else its text); endpoint and channel as short texts; the four amounts as varints; `at` in ms
 * (6 bytes); the period when it is not `at`'s month; the two hashes, 32 bytes each.
 */
const VERSION = 1;
const OWN_REQUEST_ID = /^req_[A-Za-z0-9_-]{16}$/;

class Writer {
  private readonly parts: Buffer[] = [];
  byte(n: number) {
    this.parts.push(Buffer.of(n));
  }
  text(s: string) {
    const b = Buffer.from(s, 'utf8');
    if (b.length > 255) throw new Error('a debit record text is at most 255 bytes');
    this.byte(b.length);
    this.parts.push(b);
  }
  varint(n: number) {
    const out: number[] = [];
    for (let v = n; ; v = Math.floor(v / 128)) {
      if (v < 128) {
        out.push(v);
        break;
      }
      out.push((v % 128) | 128);
    }
    this.parts.push(Buffer.from(out));
  }
  raw(b: Buffer) {
    this.parts.push(b);
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly b: Buffer) {}
  byte(): number {
    return this.b[this.at++]!;
  }
  raw(n: number): Buffer {
    const out = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  text(): string {
    return this.raw(this.byte()).toString('utf8');
  }
  varint(): number {
    let n = 0;
    for (let scale = 1; ; scale *= 128) {
      const b = this.byte();
      n += (b & 127) * scale;
      if (b < 128) return n;
    }
  }
}

/** The bytes of a record; null when a text of it is too long for them (the event then stays generic). */
export function recordBytes(r: DebitRecord): Buffer | null {
  if ([r.request_id, r.endpoint, r.channel].some((t) => Buffer.byteLength(t) > 255)) return null;
  const w = new Writer();
  w.byte(VERSION);
  if (OWN_REQUEST_ID.test(r.request_id)) {
    w.byte(0);
    w.raw(Buffer.from(r.request_id.slice(4), 'base64url'));
  } else {
    w.byte(1);
    w.text(r.request_id);
  }
  w.text(r.endpoint);
  w.text(r.channel);
  for (const n of [r.cost, r.from_allowance, r.from_prepaid, r.from_overage]) w.varint(n);
  const at = Buffer.alloc(6);
  at.writeUIntBE(r.at, 0, 6);
  w.raw(at);
  w.text(r.period ?? '');
  w.raw(Buffer.from(r.prev_hash, 'hex'));
  w.raw(Buffer.from(r.hash, 'hex'));
  return w.done();
}

/** The record the bytes hold. */
export function recordOfBytes(b: Buffer): DebitRecord {
  const r = new Reader(b);
  const version = r.byte();
  if (version !== VERSION) throw new Error(`debit record of unknown version ${version}`);
  const request_id = r.byte() === 0 ? `req_${r.raw(12).toString('base64url')}` : r.text();
  const endpoint = r.text();
  const channel = r.text();
  const [cost, from_allowance, from_prepaid, from_overage] = [r.varint(), r.varint(), r.varint(), r.varint()];
  const at = r.raw(6).readUIntBE(0, 6);
  const period = r.text() || null;
  return { request_id, endpoint, channel, cost: cost, from_allowance: from_allowance, from_prepaid: from_prepaid, from_overage: from_overage, at, period, prev_hash: r.raw(32).toString('hex'), hash: r.raw(32).toString('hex') };
}
