import { expect } from 'chai';
import { uuidV7 } from '../../infra/sqlite/uuid-v7.js';

describe('Event ids (UUID v7)', () => {
  it('are RFC 9562 version 7 UUIDs carrying the millisecond they were made in', () => {
    const at = Date.UTC(2024, 2, 15, 12, 0, 0, 123);
    const id = uuidV7(at);
    expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).to.equal(at);
  });

  it('sort in time order across milliseconds, and never repeat', () => {
    const ids: string[] = [];
    for (let ms = 0; ms < 50; ms++) for (let i = 0; i < 200; i++) ids.push(uuidV7(1_700_000_000_000 + ms));
    expect(new Set(ids).size).to.equal(ids.length);
    const firstOfEach = ids.filter((_, i) => i % 200 === 0);
    expect([...firstOfEach].sort()).to.deep.equal(firstOfEach);
    expect(ids.slice(0, 200).every((id) => id < ids[200]!)).to.equal(true);
  });
});
