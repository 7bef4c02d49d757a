import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { ExportDirectory } from '../../infra/files/export-directory.js';
import type { RunLock } from '../../src/core/export-files.port.js';
import { projectRoot } from '../../src/core/paths.js';
import { until } from '../support/processes.js';
import { tempDir } from '../support/server.js';
import { exportFilesContract } from './export-files.contract.js';

const RUN = 'exp_20261124T2230Z_3fa9c1';
const NAME = 'scores_history.csv.gz';

/** Another process that takes the run lock through the adapter and keeps it until it is killed; prints `locked` or `busy`. */
function lockHolder(root: string): { child: ChildProcess; said: () => string; exited: Promise<unknown> } {
  const code = [
    "import { ExportDirectory } from './infra/files/export-directory.js';",
    'const lock = await new ExportDirectory(process.argv[1]).lock();',
    "console.log(lock ? 'locked' : 'busy');",
    'if (!lock) process.exit(0);',
    'setInterval(() => undefined, 60_000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code, root], {
    cwd: projectRoot(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { child, said: () => out, exited };
}

async function write(stream: Writable, bytes: Buffer): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    stream.once('error', reject);
    stream.end(bytes, () => resolve());
  });
}

async function readAll(stream: Readable): Promise<Buffer> {
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

/** 10 000 bytes, each its offset modulo 251 (so a range shows which bytes it holds). */
const BYTES = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251));

describe('Export files in a directory (infra/files)', function () {
  this.timeout(60_000);
  let root: string;
  let files: ExportDirectory;
  const held: RunLock[] = [];
  const children: ChildProcess[] = [];

  beforeEach(() => {
    root = join(tempDir('scores-export-dir-'), 'exports');
    files = new ExportDirectory(root);
  });
  afterEach(async () => {
    for (const lock of held.splice(0)) await lock.release();
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(join(root, '..'), { recursive: true, force: true });
  });
  const lock = async () => {
    const l = await files.lock();
    if (l) held.push(l);
    return l;
  };

  describe('When the run lock is taken', () => {
    it('is exclusive within the process while held, and free again once released', async () => {
      const first = await lock();
      expect(first).not.to.equal(null);
      expect(await lock()).to.equal(null);
      // Another adapter on the same directory (another part of the process) is refused as well.
      expect(await new ExportDirectory(root).lock()).to.equal(null);

      await first!.release();
      const second = await lock();
      expect(second).not.to.equal(null);
      expect(await lock()).to.equal(null);
      await second!.release();
      // Releasing twice is harmless.
      await second!.release();
      expect(await lock()).not.to.equal(null);
    });

    it('creates the directory when it is not there yet', async () => {
      expect(existsSync(root)).to.equal(false);
      expect(await lock()).not.to.equal(null);
      expect(existsSync(join(root, 'run.lock'))).to.equal(true);
    });

    it('refuses another process while this one holds it, even after a refused attempt in this one closed its connection', async () => {
      const ours = await lock();
      expect(ours).not.to.equal(null);
      // Closing a descriptor of the file drops every POSIX lock the process has on it, unless SQLite keeps it open.
      expect(await lock()).to.equal(null);
      const other = lockHolder(root);
      children.push(other.child);
      await other.exited;
      expect(other.said().trim()).to.equal('busy');
    });

    it('is refused while another process holds it, and is free once that process is killed with -9', async () => {
      const other = lockHolder(root);
      children.push(other.child);
      await until(() => other.said().includes('locked') || other.child.exitCode !== null, 30_000);
      expect(other.said().trim()).to.equal('locked');

      expect(await lock()).to.equal(null);
      expect(await lock()).to.equal(null);

      other.child.kill('SIGKILL');
      await other.exited;
      // The operating system released the process's lock with it: nothing judged it stale.
      expect(await lock()).not.to.equal(null);
    });
  });

  describe('When a file is written', () => {
    it('is not there under its name until committed, and is whole once it is', async () => {
      const sink = await files.create(RUN, NAME);
      await write(sink.stream, BYTES);

      expect(await files.size(RUN, NAME)).to.equal(null);
      expect(readdirSync(join(root, RUN))).to.deep.equal([`.${NAME}.partial`]);
      expect(await files.runs()).to.deep.equal([RUN]);

      await sink.commit();
      expect(await files.size(RUN, NAME)).to.equal(BYTES.length);
      expect(readdirSync(join(root, RUN))).to.deep.equal([NAME]);
      expect((await readAll(files.read(RUN, NAME))).equals(BYTES)).to.equal(true);
    });

    it('removes what was written when aborted, and the name never appears', async () => {
      const sink = await files.create(RUN, NAME);
      sink.stream.write(BYTES.subarray(0, 5_000));
      await sink.abort();

      expect(await files.size(RUN, NAME)).to.equal(null);
      expect(readdirSync(join(root, RUN))).to.deep.equal([]);
    });

    it('replaces a partial file a dead run left under the same name', async () => {
      mkdirSync(join(root, RUN), { recursive: true });
      writeFileSync(join(root, RUN, `.${NAME}.partial`), 'left over by a crash, and longer than what comes next');
      const sink = await files.create(RUN, NAME);
      await write(sink.stream, Buffer.from('new'));
      await sink.commit();

      expect((await readAll(files.read(RUN, NAME))).toString()).to.equal('new');
    });

    it('answers null for the size of a file or a run that is not there', async () => {
      expect(await files.size(RUN, NAME)).to.equal(null);
      mkdirSync(join(root, RUN, 'divergence_events.csv.gz'), { recursive: true });
      // A directory under a file's name is no file.
      expect(await files.size(RUN, 'divergence_events.csv.gz')).to.equal(null);
    });
  });

  describe('When a file is read', () => {
    beforeEach(async () => {
      const sink = await files.create(RUN, NAME);
      await write(sink.stream, BYTES);
      await sink.commit();
    });

    it('gives exactly the bytes of an inclusive range', async () => {
      for (const [start, end] of [
        [0, 99],
        [0, 0],
        [9_999, 9_999],
        [4_321, 8_765],
        [1_000, 9_999],
      ] as const) {
        const got = await readAll(files.read(RUN, NAME, { start, end }));
        expect(got.length, `${start}-${end}`).to.equal(end - start + 1);
        expect(got.equals(BYTES.subarray(start, end + 1)), `${start}-${end}`).to.equal(true);
      }
    });

    it('gives the whole file without a range', async () => {
      expect((await readAll(files.read(RUN, NAME))).equals(BYTES)).to.equal(true);
    });
  });

  describe('When runs are listed and removed', () => {
    it('lists the run directories only, sorted, and none when the directory is not there', async () => {
      expect(await files.runs()).to.deep.equal([]);
      for (const id of ['exp_b', 'exp_a', 'exp_c']) {
        const sink = await files.create(id, NAME);
        await write(sink.stream, Buffer.from(id));
        if (id !== 'exp_c') await sink.commit();
      }
      await lock(); // run.lock: a file
      writeFileSync(join(root, 'notes.txt'), 'a stray file');
      mkdirSync(join(root, '.hidden'));
      mkdirSync(join(root, 'bad name'));

      expect(await files.runs()).to.deep.equal(['exp_a', 'exp_b', 'exp_c']);
    });

    it('removes a run with its complete and partial files, and a run that is not there without a fault', async () => {
      const done = await files.create(RUN, NAME);
      await write(done.stream, BYTES);
      await done.commit();
      const partial = await files.create(RUN, 'scores_versions.csv.gz');
      await write(partial.stream, BYTES);
      const other = await files.create('exp_other', NAME);
      await write(other.stream, BYTES);
      await other.commit();

      await files.remove(RUN);
      await files.remove('exp_never');

      expect(await files.runs()).to.deep.equal(['exp_other']);
      expect(existsSync(join(root, RUN))).to.equal(false);
      expect(await files.size('exp_other', NAME)).to.equal(BYTES.length);
    });
  });

  describe('When a run id or a file name is not one it makes', () => {
    const badIds = ['../x', '..', '.', '', 'a/b', 'a\\b', '/tmp', 'exp 1', 'x'.repeat(101)];
    const badNames = ['../x', '../../etc/passwd', 'a/b.csv', '.hidden.csv', 'no_extension', 'UPPER.CSV', 'x.csv/', ''];

    it('refuses a bad run id everywhere, touching nothing outside its directory', async () => {
      const outside = join(root, '..', 'x');
      for (const id of badIds) {
        expect((await failureOf(() => files.create(id, NAME))).message, id).to.match(/bad export run id/);
        expect((await failureOf(() => files.size(id, NAME))).message, id).to.match(/bad export run id/);
        expect((await failureOf(() => files.remove(id))).message, id).to.match(/bad export run id/);
        expect((await failureOf(() => files.read(id, NAME))).message, id).to.match(/bad export run id/);
      }
      expect(existsSync(outside)).to.equal(false);
      expect(existsSync(join(root, '..'))).to.equal(true);
    });

    it('refuses a bad file name', async () => {
      for (const name of badNames) {
        expect((await failureOf(() => files.create(RUN, name))).message, name).to.match(/bad export file name/);
        expect((await failureOf(() => files.size(RUN, name))).message, name).to.match(/bad export file name/);
        expect((await failureOf(() => files.read(RUN, name))).message, name).to.match(/bad export file name/);
      }
      expect(await files.runs()).to.deep.equal([]);
    });
  });
});

exportFilesContract('a directory (infra/files)', () => {
  const root = join(tempDir('scores-export-dir-'), 'exports');
  return Promise.resolve({
    files: new ExportDirectory(root),
    another: () => new ExportDirectory(root),
    cleanup: () => Promise.resolve(rmSync(join(root, '..'), { recursive: true, force: true })),
  });
});
