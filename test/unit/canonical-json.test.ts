import { expect } from 'chai';
import { GENESIS_HASH, canonicalJson, computeHash, debitLineJson, sealEvent } from '../../src/domain/ledger/ledger.events.js';

/** The definition, written the slow obvious way: keys sorted at every depth, undefined left out. */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  const object = value as Record<string, unknown>;
  const parts = Object.keys(object)
    .sort()
    .filter((k) => object[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${reference(object[k])}`);
  return `{${parts.join(',')}}`;
}

/** A deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('Canonical JSON of ledger event data', () => {
  it('writes what the definition writes, for flat and nested values and awkward keys', () => {
    const cases: unknown[] = [
      { b: 'é"\\\n\u2028', a: -0, c: 1e21, d: null, e: true, f: undefined, g: NaN, h: Infinity },
      { '10': 'ten', '9': 'nine', a: 1 },
      JSON.parse('{"__proto__": "x", "z": 1}'),
      { constructor: 'c', toString: 't', hasOwnProperty: 1 },
      { nested: { y: 1, x: [3, { b: 2, a: 1 }] }, a: 'top' },
      { f: () => 1, s: Symbol('s'), k: 'v' },
      {},
      [],
      'text',
      7,
      null,
    ];
    for (const value of cases) expect(canonicalJson(value), String(reference(value))).to.equal(reference(value));
  });

  it('agrees with the definition on 2,000 random flat objects', () => {
    const next = random(20241115);
    const keyChars = [...'abcdefghijklmnopqrstuvwxyz_ABC0123456789é"\\'];
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => pick(keyChars)).join('');
    const values = () => pick([null, undefined, true, false, 0, -0, 1.5, -1e-7, 1e21, next() * 1e6, text(5), '', '\u0000\u001f\u2028', Number.NaN]);
    for (let i = 0; i < 2_000; i++) {
      const object: Record<string, unknown> = {};
      const size = Math.floor(next() * 14);
      for (let k = 0; k < size; k++) object[text(1 + Math.floor(next() * 8))] = values();
      expect(canonicalJson(object), JSON.stringify(object)).to.equal(reference(object));
    }
  });

  it('keeps the hashes of events already written (known answers)', () => {
    const debited = sealEvent(
      'CreditsDebited',
      { request_id: 'req_x', endpoint: 'scores', channel: 'rest', cost: 2, from_allowance: 1, from_prepaid: 1, from_overage: 0, period: '2024-05' },
      '2024-05-15T12:00:00.000Z',
      GENESIS_HASH,
    );
    expect(debited.data.hash).to.equal('316fd13a8ffe210459a14dad9976ca3d7368c1efcdaf0f13b49466523ac7daae');
    // The stored order of the fields stays: the event's own, then at, prev_hash, hash.
    expect(Object.keys(debited.data)).to.deep.equal([
      'request_id',
      'endpoint',
      'channel',
      'cost',
      'from_allowance',
      'from_prepaid',
      'from_overage',
      'period',
      'at',
      'prev_hash',
      'hash',
    ]);
    const pack = { pack_id: 'inv-1', credits: 100, at: '2024-05-15T12:00:00.000Z', prev_hash: GENESIS_HASH };
    expect(computeHash('PackPurchased', pack)).to.equal('0a41a794e654fe661a56f5335a28d52ea7b55b358597d44bb987e8c8bfb01797');
  });

  it("writes a call's debit line field by field exactly as the definition, and leaves any other shape to it", () => {
    const next = random(20261128);
    const texts = ['req_6iGaDhNY95CZhaU7', 'scores', 'rest', 'mcp', '2026-11', 'é"\\\n\u2028', '', '\u0000'];
    const numbers = [0, -0, 2, 1.5, 1e21, -1e-7, 123456789];
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
    for (let i = 0; i < 2_000; i++) {
      const data: Record<string, unknown> = { request_id: pick(texts), endpoint: pick(texts), channel: pick(texts), cost: pick(numbers) };
      Object.assign(data, { from_allowance: pick(numbers), from_prepaid: pick(numbers), from_overage: pick(numbers), period: pick(texts) });
      Object.assign(data, { at: pick(texts), prev_hash: pick([GENESIS_HASH, 'ab'.repeat(32)]), hash: undefined });
      expect(debitLineJson(data), JSON.stringify(data)).to.equal(reference(data));
    }
    const line = { request_id: 'r', endpoint: 'scores', channel: 'rest', cost: 2, from_allowance: 2, from_prepaid: 0, from_overage: 0, period: '2026-11', at: 'x', prev_hash: GENESIS_HASH };
    for (const odd of [{ extra: 1 }, { cost: Number.NaN }, { cost: '2' }, { period: null }, { at: undefined }, { hash: 'h' }]) {
      expect(debitLineJson({ ...line, ...odd }), JSON.stringify(odd)).to.equal(null);
    }
    expect(debitLineJson(line)).to.equal(reference(line));
  });
});
