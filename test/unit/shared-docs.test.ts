import { expect } from 'chai';
import { SharedDocs, SharedDocsBuilder } from '../../infra/sqlite/read-model-writes.js';

describe('SharedDocsBuilder', () => {
  it('gives back every document as it was added, across chunks, with multi-byte characters', () => {
    const texts = [
      '',
      JSON.stringify({ a: 1 }),
      'é'.repeat(400_000), // 800 KB of UTF-8: fills most of a chunk
      JSON.stringify({ name: 'Zürich 東京 🚀', n: [1, 2, 3] }),
      'x'.repeat(3_000_000), // larger than a chunk
      '🚀'.repeat(10),
      'tail',
    ];
    const builder = new SharedDocsBuilder();
    for (const t of texts) builder.add(t);
    const built = builder.finish();
    // What the writer thread sees: a SharedDocs over the same shared memory.
    const docs = new SharedDocs(structuredClone(built.shared));
    expect(texts.map((_, i) => docs.doc(i))).to.deep.equal(texts);
    expect(built.shared.bytes.byteLength).to.equal(texts.reduce((n, t) => n + Buffer.byteLength(t), 0));
  });
});
