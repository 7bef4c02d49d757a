import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { GridFSBucket, MongoClient, MongoServerError, type Collection, type Db, type ObjectId } from 'mongodb';
import type { ExportFileSink, ExportFiles, RunLock } from '../../src/core/export-files.port.js';
import { checkExportPath } from '../../src/domain/exports/export-bundle.js';

interface FileDoc {
  _id: string;
  filename: string;
  length: number;
  metadata?: { run?: string };
}

interface LeaseDoc {
  _id: string;
  owner: string;
  expires_at: Date;
}

export interface GridFsExportFilesOptions {
  /** Bucket name: `<bucket>.files` and `<bucket>.chunks` (default `export_files`). */
  bucket?: string;
  /** How long a run lock outlives its holder's last heartbeat (default 15 s; renewed every third of it). */
  leaseMs?: number;
}

const LEASE_ID = 'export-run';

/**
 * Export bundles in GridFS on the read-store server (MongoDB or FerretDB), so that every replica
 * serves every download. A file is uploaded as `<run>/.<name>.partial` and renamed to
 * `<run>/<name>` on commit, as the directory renames its partial file: a reader never sees half a
 * file. File ids are `<run>/<name>/<uuid>`, so the chunks of an upload whose process died before
 * its file document was written are still found, and removed, by their run.
 *
 * The run lock is a lease document (`<bucket>_lock`): taken by inserting it, or by replacing an
 * expired one; its holder renews it every third of `leaseMs` and deletes it on release. A holder
 * that dies (kill -9, a lost machine) frees it once the lease runs out: a wire connection has no
 * lock the server drops with it. Expiry is judged on the clocks of the processes, which must
 * agree to well within `leaseMs`.
 */
export class GridFsExportFiles implements ExportFiles {
  private readonly client: MongoClient;
  private readonly ownsClient: boolean;
  private readonly db: Db;
  private readonly bucket: GridFSBucket;
  private readonly files: Collection<FileDoc>;
  private readonly chunks: Collection<{ files_id: string }>;
  private readonly leases: Collection<LeaseDoc>;
  private readonly leaseMs: number;
  /** The locks this adapter holds, released by `close`. */
  private readonly held = new Set<RunLock>();

  constructor(clientOrUrl: MongoClient | string, dbName: string, options: GridFsExportFilesOptions = {}) {
    this.ownsClient = typeof clientOrUrl === 'string';
    this.client = typeof clientOrUrl === 'string' ? new MongoClient(clientOrUrl) : clientOrUrl;
    this.db = this.client.db(dbName);
    const name = options.bucket ?? 'export_files';
    this.bucket = new GridFSBucket(this.db, { bucketName: name });
    this.files = this.db.collection<FileDoc>(`${name}.files`);
    this.chunks = this.db.collection(`${name}.chunks`);
    this.leases = this.db.collection<LeaseDoc>(`${name}_lock`);
    this.leaseMs = options.leaseMs ?? 15_000;
  }

  async lock(): Promise<RunLock | null> {
    const owner = randomUUID();
    if (!(await this.takeLease(owner))) return null;
    const renew = setInterval(() => {
      this.leases.updateOne({ _id: LEASE_ID, owner }, { $set: { expires_at: this.expiry() } }).catch(() => undefined);
    }, Math.max(1, Math.floor(this.leaseMs / 3)));
    renew.unref();
    const lock: RunLock = {
      release: async () => {
        if (!this.held.delete(lock)) return;
        clearInterval(renew);
        await this.leases.deleteOne({ _id: LEASE_ID, owner });
      },
    };
    this.held.add(lock);
    return lock;
  }

  private expiry(): Date {
    return new Date(Date.now() + this.leaseMs);
  }

  /** Inserts the lease, or takes it over once expired; false while someone holds it. */
  private async takeLease(owner: string): Promise<boolean> {
    try {
      await this.leases.insertOne({ _id: LEASE_ID, owner, expires_at: this.expiry() });
      return true;
    } catch (err) {
      if (!(err instanceof MongoServerError && err.code === 11000)) throw err;
    }
    const taken = await this.leases.updateOne(
      { _id: LEASE_ID, expires_at: { $lt: new Date() } },
      { $set: { owner, expires_at: this.expiry() } },
    );
    return taken.modifiedCount === 1;
  }

  async create(runId: string, name: string): Promise<ExportFileSink> {
    const final = filename(runId, name);
    const partial = `${runId}/.${name}.partial`;
    await this.deleteNamed(partial);
    const id = `${final}/${randomUUID()}`;
    // String ids (the driver's types say ObjectId; GridFS takes any _id).
    const stream = this.bucket.openUploadStreamWithId(id as unknown as ObjectId, partial, { metadata: { run: runId } });
    return {
      stream,
      commit: async () => {
        await this.bucket.rename(id as unknown as ObjectId, final);
        // An earlier file of that name (none in practice: run ids are new) goes once the new one is there.
        for (const old of await this.files.find({ filename: final, _id: { $ne: id } }).toArray()) await this.deleteFile(old._id);
      },
      abort: async () => {
        stream.destroy();
        await this.deleteFile(id);
      },
    };
  }

  async size(runId: string, name: string): Promise<number | null> {
    const doc = await this.files.find({ filename: filename(runId, name) }).sort({ uploadDate: -1 }).limit(1).next();
    return doc ? doc.length : null;
  }

  read(runId: string, name: string, range?: { start: number; end: number }): Readable {
    // The driver's `end` is exclusive.
    return this.bucket.openDownloadStreamByName(filename(runId, name), range ? { start: range.start, end: range.end + 1 } : {});
  }

  async runs(): Promise<string[]> {
    const docs = await this.files.find({}, { projection: { metadata: 1 } }).toArray();
    return [...new Set(docs.flatMap((d) => (d.metadata?.run ? [d.metadata.run] : [])))].sort();
  }

  async remove(runId: string): Promise<void> {
    checkExportPath(runId);
    await this.files.deleteMany({ 'metadata.run': runId });
    await this.chunks.deleteMany({ files_id: { $regex: `^${runId}/` } });
  }

  async close(): Promise<void> {
    for (const lock of [...this.held]) await lock.release();
    if (this.ownsClient) await this.client.close();
  }

  private async deleteNamed(name: string): Promise<void> {
    for (const doc of await this.files.find({ filename: name }).toArray()) await this.deleteFile(doc._id);
  }

  /** A file document and its chunks; the chunks alone when the upload never wrote its document. */
  private async deleteFile(id: string): Promise<void> {
    await this.files.deleteOne({ _id: id });
    await this.chunks.deleteMany({ files_id: id });
  }
}

function filename(runId: string, name: string): string {
  checkExportPath(runId, name);
  return `${runId}/${name}`;
}
