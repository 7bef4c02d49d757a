import { Get, Path, Produces, Request, Response, Route, Security, SuccessResponse, Tags } from '@tsoa/runtime';
import { Readable, Transform } from 'node:stream';
import { AppError } from '../../src/core/errors.js';
import type { AuthedRequest, Principal } from '../../src/web/meter.port.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { DOWNLOAD_ACCEPT_RANGES, DOWNLOAD_CACHE_CONTROL, HEADER } from '../../src/web/response-headers.js';
import { isBundleId, isExportName } from '../../src/domain/exports/export-bundle.js';
import type { ExportDownloaded } from '../../src/domain/exports/export.events.js';
import { exportRuns } from '../../projections/exports/exports.projection.js';
import { CommandController } from '../shared/command-controller.js';
import { answerDownload } from './download-request.js';
import { recordDownload } from './download-record.handler.js';

/**
 * Downloads of export files. A write-side controller: the files are read, and every download is
 * recorded as an event (who, which file, how many bytes), free of credits as the spec's delivery
 * endpoints are.
 */
@Route('v1/bulk/exports')
@Tags('Delivery')
@Security('api_key', ['bulk_exports'])
export class BulkDownloadController extends CommandController {
  /**
   * One file of a bundle, as `GET /v1/bulk/exports` lists it (use its `url`). The `ETag` is the
   * file's sha256; `If-None-Match` answers 304 when you hold it, and `Range` (one range, e.g.
   * `bytes=1048576-`) resumes a download with 206 (send `If-Range` with the ETag to be sure the
   * rest is of the same file). A bundle stays downloadable while it is among the latest three.
   * Free; each download is recorded for your account.
   * @summary Download an export file
   * @param bundle_id The bundle, from the listing's `url`.
   * @param name The file: scores_history.csv.gz, divergence_events.csv.gz or scores_versions.csv.gz.
   * @example bundle_id "exp_20261124T2230Z_3fa9c1"
   * @example name "scores_history.csv.gz"
   */
  @Get('{bundle_id}/{name}')
  @Produces('application/gzip')
  @SuccessResponse(200, 'The whole file (gzipped CSV)', 'application/gzip')
  @Response<Readable>(206, 'The range asked for (Content-Range says which)', undefined, 'application/gzip')
  @Response(304, 'Not modified: the ETag in If-None-Match is the file\'s')
  @Response<ProblemDetails>(400, 'A query parameter (this endpoint takes none)')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, 'No such bundle or file, or a bundle no longer kept (not_found)')
  @Response<ProblemDetails>(416, 'A range starting at or beyond the end of the file (range_not_satisfiable)')
  public async downloadBulkExportFile(@Request() req: AuthedRequest, @Path() bundle_id: string, @Path() name: string): Promise<Readable> {
    return this.serve(req, (caller) => this.download(req, caller, bundle_id, name));
  }

  private async download(req: AuthedRequest, principal: Principal, bundle_id: string, name: string): Promise<Readable> {
    const missing = (why: string) => new AppError('not_found', `${why}; GET /v1/bulk/exports lists the latest bundle`);
    if (!isExportName(name)) throw missing(`no export file is named ${JSON.stringify(name)}`);
    const run = isBundleId(bundle_id) ? await this.ctx.reads.get(exportRuns, bundle_id) : null;
    if (run?.status === 'deleted') throw missing(`bundle ${bundle_id} was replaced by newer ones and is no longer kept`);
    const file = run?.status === 'completed' ? run.files.find((f) => f.name === name) : undefined;
    const size = file ? await this.ctx.exportFiles.size(bundle_id, name) : null;
    if (!file || size === null) throw missing(`no bundle ${JSON.stringify(bundle_id)} is served`);

    const etag = `"${file.sha256}"`;
    this.setHeader(HEADER.etag, etag);
    this.setHeader(HEADER.acceptRanges, DOWNLOAD_ACCEPT_RANGES);
    this.setHeader(HEADER.cacheControl, DOWNLOAD_CACHE_CONTROL);
    const answer = answerDownload(req.headers, size, etag);
    if (answer.status === 304) {
      this.setStatus(304);
      return Readable.from([]);
    }
    if (answer.status === 416) {
      // Set on the response itself: the problem handler answers, not tsoa (which applies setHeader's).
      req.res!.setHeader(HEADER.contentRange, `bytes */${size}`);
      throw new AppError('range_not_satisfiable', `no range in ${JSON.stringify(req.headers.range)} starts inside the file's ${size} bytes`);
    }
    const length = answer.end - answer.start + 1;
    this.setStatus(answer.status);
    this.setHeader('Content-Type', 'application/gzip');
    this.setHeader(HEADER.contentLength, String(length));
    this.setHeader(HEADER.contentDisposition, `attachment; filename="${name}"`);
    if (answer.status === 206) this.setHeader(HEADER.contentRange, `bytes ${answer.start}-${answer.end}/${size}`);

    const source = this.ctx.exportFiles.read(bundle_id, name, { start: answer.start, end: answer.end });
    let sent = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _enc, callback) {
        sent += chunk.length;
        callback(null, chunk);
      },
    });
    source.on('error', (err) => counted.destroy(err));
    const res = req.res!;
    res.once('close', () => {
      // A client that went away stops the file read (a pipe would leave it open).
      source.destroy();
      const data: ExportDownloaded['data'] = {
        account_id: principal.account_id,
        key_id: principal.key_id,
        request_id: principal.request_id,
        run_id: bundle_id,
        name,
        status: answer.status,
        range: answer.status === 206 ? `bytes=${answer.start}-${answer.end}` : null,
        bytes_sent: sent,
        complete: res.writableFinished && sent === length,
        at: this.ctx.clock.now().toISOString(),
      };
      // The bytes are sent whatever happens to their record: a failure to write it is logged.
      recordDownload(this.ctx, data).catch((err: unknown) => this.ctx.log.warn({ err, download: data }, 'export download not recorded'));
    });
    return source.pipe(counted);
  }
}
