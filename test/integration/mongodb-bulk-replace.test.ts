import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MongoReadStore } from '../../infra/mongodb/read-store.js';
import { defineCollection } from '../../src/core/read-store.port.js';

interface Row {
  id: string;
  n: number;
}

/** What the test uses of the MongoDB driver's client. */
interface DriverClient {
  monitorCommands: boolean;
  on(event: 'commandStarted', listener: (e: { commandName: string; command: Record<string, unknown> }) => void): void;
  db(name: string): { command(cmd: Record<string, unknown>): Promise<Record<string, unknown>> };
}

const rows = defineCollection<Row>({ name: 'rows', key: (r) => r.id, fields: ['n'], indexes: [] });

/** More than FerretDB's PostgreSQL pool holds by default (`pool_max_conns=50`), with room to spare. */
const MANY = 150;

/** Rejects when `promise` takes longer than `ms`: a wedged server must fail the test, not hang it. */
function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function batch(n: number, position: string) {
  const ids = Array.from({ length: MANY }, (_, i) => `r${String(i).padStart(3, '0')}`);
  return {
    writes: ids.map((id) => ({ op: 'upsert' as const, collection: rows.name, id, doc: { id, n } })),
    checkpoints: Object.fromEntries(ids.map((id) => [`projector_${id}`, position])),
  };
}

/**
 * FerretDB 1.24 holds a PostgreSQL connection for every single-document statement of an `update`
 * command until the command ends, so one command replacing more documents than its pool holds
 * waits forever on itself and the whole server stops answering (docs/scaling.md, "What is not
 * verified yet"). The read store must never send such a command.
 */
describe('MongoDB adapter: a commit that replaces many existing documents at once', function () {
  this.timeout(120_000);
  const uri = process.env['MONGODB_URI'];
  if (!uri) {
    it('runs when MONGODB_URI is set (npm run engines starts FerretDB)');
    return;
  }
  const database = `scores_bulk_${randomUUID().slice(0, 8)}`;
  let store: MongoReadStore;

  before(async () => {
    store = new MongoReadStore(uri, database);
    await store.register([rows]);
  });

  after(async () => {
    await within(10_000, store.dropDatabase(), 'dropDatabase').catch(() => undefined);
    await store?.close();
  });

  it(`replaces ${MANY} documents and advances ${MANY} checkpoints in one commit, and the server still answers`, async () => {
    await within(30_000, store.commit(batch(1, '1')), 'the first commit (all new documents)');
    await within(30_000, store.commit(batch(2, '2')), `the commit replacing ${MANY} existing documents`);
    // Another client, as the other processes of a fleet: a wedged FerretDB answers nobody.
    const other = new MongoReadStore(uri, database);
    try {
      expect(await within(10_000, other.checkpoint('projector_r000'), 'a read from another client')).to.equal('2');
    } finally {
      await other.close();
    }
    const page = await store.find(rows, {}, {});
    expect(page.items).to.have.length(MANY);
    expect(page.items.every((r) => r.n === 2)).to.equal(true);
    expect(await store.checkpoint(`projector_r${String(MANY - 1)}`)).to.equal('2');
  });

  it('reads documents by id with lookups FerretDB answers from an index (no $in, which it answers by reading the whole collection)', async () => {
    const reader = new MongoReadStore(uri, database);
    // The store's own driver client, watched for the commands it sends (only infra imports the driver).
    const client = (reader as unknown as { client: DriverClient }).client;
    client.monitorCommands = true;
    const finds: Record<string, unknown>[] = [];
    client.on('commandStarted', (e) => {
      if (e.commandName === 'find' && e.command['find'] === 'rm_rows') finds.push(e.command['filter'] as Record<string, unknown>);
    });
    try {
      const ferret = (await client.db('admin').command({ buildInfo: 1 }))['ferretdbVersion'] !== undefined;
      const got = await reader.getMany(rows, ['r001', 'r002', 'nope', 'r149']);
      expect([...got.keys()].sort()).to.deep.equal(['r001', 'r002', 'r149']);
      expect(got.get('r002')).to.deep.equal({ id: 'r002', n: 2 });
      const usedIn = finds.some((f) => JSON.stringify(f).includes('$in'));
      // FerretDB: one equality on _id per id; a real MongoDB: one $in.
      expect(usedIn, JSON.stringify(finds)).to.equal(!ferret);
      if (ferret) expect(finds.map((f) => f['_id'])).to.have.members(['r001', 'r002', 'nope', 'r149']);
    } finally {
      await reader.close();
    }
  });
});
