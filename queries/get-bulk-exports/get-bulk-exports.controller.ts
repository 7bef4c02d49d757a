import { Example, Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { BULK_EXPORTS_NOTE } from '../../src/domain/exports/export-bundle.js';
import { MeteredController } from '../shared/metered-controller.js';
import { type BulkExportsResponse, run } from './get-bulk-exports.query.js';

@Route('v1/bulk/exports')
@Tags('Delivery')
@Security('api_key', ['bulk_exports'])
export class GetBulkExportsController extends MeteredController {
  /**
   * The latest Backtest Pack: the full score history, every divergence event and every published
   * score version (for point-in-time backtests), as gzipped CSV, rebuilt nightly after the day's
   * publication. Each `url` downloads its file with the same key. Free (downloads too).
   * @summary Bulk export files
   */
  @Get()
  @Example<BulkExportsResponse>({
    exports: [
      {
        bundle_id: 'exp_20261124T2230Z_3fa9c1',
        name: 'scores_history.csv.gz',
        url: 'https://api.example.com/v1/bulk/exports/exp_20261124T2230Z_3fa9c1/scores_history.csv.gz',
        row_count: 1223376,
        sha256: 'fbaf877884d7861f0cb91255c52d8eb79aa4702a4e924c0fcb96eeb2c572b0ed',
        generated_at: '2026-11-24 22:30',
      },
    ],
    note: BULK_EXPORTS_NOTE,
  })
  @Response<ProblemDetails>(400, 'A query parameter (this endpoint takes none)')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  public async listBulkExports(@Request() req: AuthedRequest): Promise<BulkExportsResponse> {
    return this.serve(req, run);
  }
}
