import { Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import type { MeteredCall } from '../shared/query-context.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { FIELD_DEFINITIONS, type FieldDefinition } from './field-definitions.js';
import { DATASET_STATEMENT, RESTATEMENT_POLICY, cachedDatasetStats, coverageStatement, type HistoryDepth, type VintageStats } from './get-meta.query.js';

/** Every field any endpoint returns, by name. */
export interface FieldDefinitions {
  [field: string]: FieldDefinition;
}

export interface MetaHistory {
  /** How far the score history reaches. */
  depth: HistoryDepth;
  /** Point-in-time vintage statistics of the restatements. */
  vintages: VintageStats;
  /** How and why rows are restated, and how to follow the corrections. */
  restatement_policy: string;
}

export interface MetaResponse {
  /** What the dataset is. */
  dataset: string;
  /** Universe statement, with the number of stocks. */
  coverage: string;
  /** Definition of every field any endpoint returns, by field name. */
  fields: FieldDefinitions;
  /** Depth, point-in-time vintage statistics and restatement policy of the score history. */
  history: MetaHistory;
  /**
   * Licence terms.
   * @format uri
   */
  license: string;
  /**
   * Documentation.
   * @format uri
   */
  docs: string;
  /**
   * MCP server endpoint (streamable HTTP; send the same X-API-Key).
   * @format uri
   */
  mcp: string;
}

@Route('v1/meta')
@Tags('Account')
@Security('api_key', ['meta'])
export class GetMetaController extends MeteredController {
  /**
   * Dataset information: what it is, its universe, a definition of every field, the depth of the
   * history with point-in-time restatement statistics, and where the licence, docs and MCP server
   * are. Free; no `as_of` (it describes the dataset, not a day's data).
   * @summary Dataset information
   */
  @Get()
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden)')
  public async getMeta(@Request() req: AuthedRequest): Promise<MetaResponse> {
    return this.serve(req, run);
  }
}

export async function run(call: MeteredCall): Promise<MetaResponse> {
  const stats = await cachedDatasetStats(call.ctx.reads, call.ctx.memo);
  await call.charge('meta');
  const base = call.ctx.baseUrl();
  return {
    dataset: DATASET_STATEMENT,
    coverage: coverageStatement(stats.universe),
    fields: { ...FIELD_DEFINITIONS },
    history: { depth: stats.depth, vintages: stats.vintages, restatement_policy: RESTATEMENT_POLICY },
    license: `${base}/license`,
    docs: `${base}/docs`,
    mcp: `${base}/mcp/http`,
  };
}
