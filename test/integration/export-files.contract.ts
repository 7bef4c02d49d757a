import { expect } from 'chai';
import type { Readable, Writable } from 'node:stream';
import type { ExportFiles, RunLock } from '../../src/core/export-files.port.js';

export interface ExportFilesFixture {
  files: ExportFiles;
  /** Another adapter on the same store (another process's view of it). */
  another(): ExportFiles;
  cleanup(): Promise<void>;
}

const RUN = 'exp_20261124T2230Z_3fa9c1';
const NAME = 'scores_history.csv.gz';

/** 10 000 bytes, each its offset modulo 251 (so a range shows which bytes it holds). */
const BYTES = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251));
/** 700 000 bytes of the same kind: more than one chunk of every adapter that stores chunks. */
const BIG = Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 7) % 253));

export async function write(stream: Writable, bytes: Buffer): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    stream.once('error', reject);
    stream.end(bytes, () => resolve());
  });
}

/** Writes in pieces of `piece` bytes, as a gzip stream hands them on. */
async function writeInPieces(stream: Writable, bytes: Buffer, piece: number): Promise<void> {
  for (let at = 0; at < bytes.length; at += piece) {
    if (!stream.write(bytes.subarray(at, at + piece))) await new Promise((r) => stream.once('drain', r));
  }
  await write(stream, Buffer.alloc(0));
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function failureOf(op: () => unknown): Promise<Error> {
  try {
    await op();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure, but it succeeded');
}

/** What every ExportFiles adapter promises (the directory, GridFS, PostgreSQL). */
export function exportFilesContract(label: string, open: () => Promise<ExportFilesFixture>): void {
  describe(`ExportFiles contract: ${label}`, function () {
    this.timeout(60_000);
    let fx: ExportFilesFixture;
    let files: ExportFiles;
    const held: RunLock[] = [];
    const others: ExportFiles[] = [];

    beforeEach(async () => {
      fx = await open();
      files = fx.files;
    });
    afterEach(async () => {
      for (const lock of held.splice(0)) await lock.release();
      for (const other of others.splice(0)) await other.close();
      await fx.cleanup();
    });
    const another = () => {
      const other = fx.another();
      others.push(other);
      return other;
    };
    const lock = async (on: ExportFiles = files) => {
      const l = await on.lock();
      if (l) held.push(l);
      return l;
    };
    const commitFile = async (runId: string, name: string, bytes: Buffer) => {
      const sink = await files.create(runId, name);
      await write(sink.stream, bytes);
      await sink.commit();
    };

    it('gives the run lock to one holder at a time, on this adapter and another on the same store, and again once released', async () => {
      const first = await lock();
      expect(first).not.to.equal(null);
      expect(await lock()).to.equal(null);
      const other = another();
      expect(await lock(other)).to.equal(null);

      await first!.release();
      const second = await lock(other);
      expect(second).not.to.equal(null);
      expect(await lock()).to.equal(null);
      await second!.release();
      // Releasing twice is harmless, and does not free a lock someone else took since.
      const third = await lock();
      expect(third).not.to.equal(null);
      await second!.release();
      expect(await lock(other)).to.equal(null);
    });

    it('frees the run lock when its holder closes', async () => {
      const other = another();
      expect(await lock(other)).not.to.equal(null);
      expect(await lock()).to.equal(null);
      await other.close();
      others.splice(others.indexOf(other), 1);
      expect(await lock()).not.to.equal(null);
    });

    it('shows a file under its name only once committed, whole', async () => {
      const sink = await files.create(RUN, NAME);
      await write(sink.stream, BYTES);
      expect(await files.size(RUN, NAME)).to.equal(null);
      expect(await another().size(RUN, NAME)).to.equal(null);
      expect(await files.runs()).to.deep.equal([RUN]);

      await sink.commit();
      expect(await files.size(RUN, NAME)).to.equal(BYTES.length);
      expect((await readAll(files.read(RUN, NAME))).equals(BYTES)).to.equal(true);
      // Any other adapter on the store serves it.
      expect((await readAll(another().read(RUN, NAME))).equals(BYTES)).to.equal(true);
    });

    it('removes what was written when aborted, and the name never appears', async () => {
      const sink = await files.create(RUN, NAME);
      await new Promise<void>((resolve) => sink.stream.write(BYTES.subarray(0, 5_000), () => resolve()));
      await sink.abort();
      expect(await files.size(RUN, NAME)).to.equal(null);
    });

    it('replaces a partial file a dead run left under the same name', async () => {
      const dead = await files.create(RUN, NAME);
      await write(dead.stream, Buffer.from('left over by a crash, and longer than what comes next'));
      await commitFile(RUN, NAME, Buffer.from('new'));
      expect((await readAll(files.read(RUN, NAME))).toString()).to.equal('new');
      expect(await files.size(RUN, NAME)).to.equal(3);
    });

    it('answers null for the size of a file or a run that is not there', async () => {
      expect(await files.size(RUN, NAME)).to.equal(null);
      await commitFile(RUN, NAME, BYTES);
      expect(await files.size(RUN, 'divergence_events.csv.gz')).to.equal(null);
    });

    it('keeps an empty file', async () => {
      await commitFile(RUN, NAME, Buffer.alloc(0));
      expect(await files.size(RUN, NAME)).to.equal(0);
      expect((await readAll(files.read(RUN, NAME))).length).to.equal(0);
    });

    it('gives exactly the bytes of an inclusive range, and the whole file without one', async () => {
      await commitFile(RUN, NAME, BYTES);
      for (const [start, end] of [[0, 99], [0, 0], [9_999, 9_999], [4_321, 8_765], [1_000, 9_999]] as const) {
        const got = await readAll(files.read(RUN, NAME, { start, end }));
        expect(got.length, `${start}-${end}`).to.equal(end - start + 1);
        expect(got.equals(BYTES.subarray(start, end + 1)), `${start}-${end}`).to.equal(true);
      }
      expect((await readAll(files.read(RUN, NAME))).equals(BYTES)).to.equal(true);
    });

    it('stores a file of many chunks written in small pieces, and reads ranges across chunk boundaries', async () => {
      const sink = await files.create(RUN, NAME);
      await writeInPieces(sink.stream, BIG, 16_384);
      await sink.commit();
      expect(await files.size(RUN, NAME)).to.equal(BIG.length);
      expect((await readAll(files.read(RUN, NAME))).equals(BIG)).to.equal(true);
      for (const [start, end] of [[0, 699_999], [255_000, 530_000], [262_143, 262_144], [699_000, 699_999], [100, 100]] as const) {
        const got = await readAll(another().read(RUN, NAME, { start, end }));
        expect(got.equals(BIG.subarray(start, end + 1)), `${start}-${end}`).to.equal(true);
      }
    });

    it('lists the runs with anything stored, sorted, and none at first', async () => {
      expect(await files.runs()).to.deep.equal([]);
      for (const id of ['exp_b', 'exp_a', 'exp_c']) {
        const sink = await files.create(id, NAME);
        await write(sink.stream, Buffer.from(id));
        if (id !== 'exp_c') await sink.commit();
      }
      await lock();
      expect(await files.runs()).to.deep.equal(['exp_a', 'exp_b', 'exp_c']);
    });

    it('removes a run with its complete and partial files, and a run that is not there without a fault', async () => {
      await commitFile(RUN, NAME, BYTES);
      const partial = await files.create(RUN, 'scores_versions.csv.gz');
      await write(partial.stream, BYTES);
      await commitFile('exp_other', NAME, BYTES);

      await files.remove(RUN);
      await files.remove('exp_never');

      expect(await files.runs()).to.deep.equal(['exp_other']);
      expect(await files.size(RUN, NAME)).to.equal(null);
      expect(await files.size('exp_other', NAME)).to.equal(BYTES.length);
    });

    it('refuses a run id or a file name it would not make, everywhere', async () => {
      for (const id of ['../x', '..', '.', '', 'a/b', 'a\\b', '/tmp', 'exp 1', 'x'.repeat(101)]) {
        expect((await failureOf(() => files.create(id, NAME))).message, id).to.match(/bad export run id/);
        expect((await failureOf(() => files.size(id, NAME))).message, id).to.match(/bad export run id/);
        expect((await failureOf(() => files.remove(id))).message, id).to.match(/bad export run id/);
        expect((await failureOf(() => files.read(id, NAME))).message, id).to.match(/bad export run id/);
      }
      for (const name of ['../x', '../../etc/passwd', 'a/b.csv', '.hidden.csv', 'no_extension', 'UPPER.CSV', 'x.csv/', '']) {
        expect((await failureOf(() => files.create(RUN, name))).message, name).to.match(/bad export file name/);
        expect((await failureOf(() => files.size(RUN, name))).message, name).to.match(/bad export file name/);
        expect((await failureOf(() => files.read(RUN, name))).message, name).to.match(/bad export file name/);
      }
      expect(await files.runs()).to.deep.equal([]);
    });
  });
}
