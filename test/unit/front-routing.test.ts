import { expect } from 'chai';
import { callerOf, chooseMember, hash32 } from '../../src/app/fleet/key-routing.js';

interface Process {
  name: string;
  hash: number;
  healthy: boolean;
}

const processes = (n: number): Process[] => Array.from({ length: n }, (_, i) => ({ name: `http://127.0.0.1:${41000 + i}`, hash: hash32(`http://127.0.0.1:${41000 + i}`), healthy: true }));
const keys = Array.from({ length: 3000 }, (_, i) => hash32(`key:sk_live_${i.toString(36).padStart(8, '0')}`));
const placement = (members: readonly Process[]) => keys.map((k) => chooseMember(k, members)!.name);

describe('The front routes a caller by rendezvous hashing (key-routing.ts)', () => {
  it('picks the same process for a key every time, whatever the order the processes are listed in', () => {
    const members = processes(4);
    const first = placement(members);
    expect(placement(members)).to.deep.equal(first);
    expect(placement([...members].reverse())).to.deep.equal(first);
  });

  it('spreads keys roughly evenly over N processes', () => {
    for (const n of [2, 3, 5, 8]) {
      const counts = new Map<string, number>();
      for (const name of placement(processes(n))) counts.set(name, (counts.get(name) ?? 0) + 1);
      expect(counts.size).to.equal(n);
      // 3000 keys: each process within 15% of its share (chance alone spreads them by about 5% of a share at n = 8).
      for (const count of counts.values()) expect(Math.abs(count - keys.length / n)).to.be.below((0.15 * keys.length) / n);
    }
  });

  it("moves only a removed process's keys, and spreads them over the others", () => {
    const members = processes(4);
    const before = placement(members);
    const gone = members[1]!.name;
    const after = placement(members.filter((m) => m.name !== gone));
    const moved = new Set<string>();
    before.forEach((name, i) => {
      if (name === gone) moved.add(after[i]!);
      else expect(after[i]).to.equal(name);
    });
    expect(moved.size).to.equal(3);
  });

  it('fails over to the next live process in the key’s own order, deterministically, and back when it returns', () => {
    const members = processes(3);
    const before = placement(members);
    members[0]!.healthy = false;
    const down = placement(members);
    // Down is removed, as far as the routing sees: the same placement as without the process.
    expect(down).to.deep.equal(placement(members.slice(1)));
    expect(placement(members)).to.deep.equal(down);
    before.forEach((name, i) => name !== members[0]!.name && expect(down[i]).to.equal(name));
    members[0]!.healthy = true;
    expect(placement(members)).to.deep.equal(before);
    for (const m of members) m.healthy = false;
    expect(chooseMember(keys[0]!, members)).to.equal(null);
  });

  it('hashes the X-API-Key header (trimmed), else the account session cookie; nothing else names a caller', () => {
    const key = 'sk_live_0123456789abcdefghijklmnop';
    expect(callerOf({ 'x-api-key': key })).to.equal(callerOf({ 'x-api-key': ` ${key} ` }));
    expect(callerOf({ 'x-api-key': key })).to.not.equal(callerOf({ 'x-api-key': `${key}x` }));
    // The key wins over a session; a session alone names its browser; other cookies name nothing.
    expect(callerOf({ 'x-api-key': key, cookie: '__Host-scores.sid=abcdefghijklmnopqrstuv' })).to.equal(callerOf({ 'x-api-key': key }));
    const session = callerOf({ cookie: 'theme=dark; __Host-scores.sid=abcdefghijklmnopqrstuv; __Host-scores.b=xyz' });
    expect(session).to.be.a('number');
    expect(session).to.equal(callerOf({ cookie: '__Host-scores.sid=abcdefghijklmnopqrstuv' }));
    for (const headers of [{}, { 'x-api-key': '  ' }, { cookie: '__Host-scores.b=xyz; __Host-scores.csrf=1' }, { authorization: `Bearer ${key}` }]) {
      expect(callerOf(headers)).to.equal(null);
    }
  });
});
