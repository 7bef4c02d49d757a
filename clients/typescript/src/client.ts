import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { errorOf, retryAfterSeconds, type ErrorCode } from './errors.js';
import type { paths } from './generated/schema.js';
import { syncHistory, type Credits, type SyncOptions, type SyncPage } from './sync.js';

export type { Credits };

export interface RetryOptions {
  /** Retries after the first attempt (default 4). */
  maxRetries?: number;
  /** First backoff when the answer names no `Retry-After` (default 500 ms), doubled each retry. */
  baseDelayMs?: number;
  /** The longest wait (default 60 s); a `Retry-After` above it ends the retries. */
  maxDelayMs?: number;
}

export interface RetryEvent {
  attempt: number;
  delayMs: number;
  status: number | null;
  code: ErrorCode | null;
}

export interface ScoresClientOptions {
  /** Sent as `X-API-Key` on every request. */
  apiKey: string;
  /** Default `https://api.example.com` (the document's server). */
  baseUrl?: string;
  retry?: RetryOptions;
  /** Called before each retry (for logs and metrics). */
  onRetry?: (event: RetryEvent) => void;
  /** The fetch to use (default the global one). */
  fetch?: (input: Request) => Promise<Response>;
}

/** The API's paths and schemas, typed from the OpenAPI document (openapi-typescript). */
export type ScoresApi = Client<paths>;

const DEFAULT_BASE_URL = 'https://api.example.com';
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Methods whose retry after a 502/503/504 cannot do anything twice. */
const IDEMPOTENT = new Set(['GET', 'DELETE']);

/**
 * A Scores API client. `GET`, `POST` and `DELETE` are openapi-fetch's, typed on the document's
 * paths; a failure is thrown as the `ScoresApiError` subclass of its problem `code`, so `data` is
 * there whenever a call returns. `429 rate_limited` and, on GET and DELETE, `502`/`503`/`504` are
 * retried with backoff, honouring `Retry-After`; `429 credits_exhausted` never is.
 *
 * ```ts
 * const scores = new ScoresClient({ apiKey: process.env.SCORES_API_KEY!, baseUrl: 'http://localhost:8080' });
 * const { data } = await scores.GET('/v1/scores/{ticker}', { params: { path: { ticker: 'AAPL' } } });
 * console.log(data?.service_score, scores.credits);
 * ```
 */
export class ScoresClient {
  readonly api: ScoresApi;
  readonly GET: ScoresApi['GET'];
  readonly POST: ScoresApi['POST'];
  readonly DELETE: ScoresApi['DELETE'];
  /** `X-Credits-Remaining` of the latest answer that carried it: a number, or `unlimited`; null before any. */
  credits: Credits | null = null;
  private readonly retry: Required<RetryOptions>;

  constructor(private readonly options: ScoresClientOptions) {
    this.retry = { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 60_000, ...options.retry };
    const send = options.fetch ?? ((input: Request) => globalThis.fetch(input));
    this.api = createClient<paths>({
      baseUrl: (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, ''),
      headers: { 'X-API-Key': options.apiKey },
      // `tickers` is one comma-separated parameter (style form, explode false).
      querySerializer: { array: { style: 'form', explode: false } },
      fetch: (request) => this.withRetries(request, send),
    });
    this.api.use(throwProblems);
    this.GET = this.api.GET;
    this.POST = this.api.POST;
    this.DELETE = this.api.DELETE;
  }

  /** The history of many tickers, page by page, from a saved `next_since` (see ./sync.ts). */
  syncHistory(options: SyncOptions = {}): AsyncGenerator<SyncPage, void, undefined> {
    return syncHistory(this, options);
  }

  private async withRetries(request: Request, send: (input: Request) => Promise<Response>): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const response = await send(request.clone());
      this.noteCredits(response);
      const wait = await this.retryDelay(request.method, response, attempt);
      if (wait === null) return response;
      this.options.onRetry?.({ attempt: attempt + 1, delayMs: wait.ms, status: response.status, code: wait.code });
      await response.body?.cancel();
      await sleep(wait.ms);
    }
  }

  /** How long to wait before retrying this answer, or null to return it. */
  private async retryDelay(method: string, response: Response, attempt: number): Promise<{ ms: number; code: ErrorCode | null } | null> {
    if (attempt >= this.retry.maxRetries) return null;
    let code: ErrorCode | null = null;
    if (response.status === 429) {
      code = await response
        .clone()
        .json()
        .then((b) => (b as { code?: ErrorCode }).code ?? null)
        .catch(() => null);
      if (code !== 'rate_limited') return null; // credits_exhausted: waiting brings no credits
    } else if (!([502, 503, 504].includes(response.status) && IDEMPOTENT.has(method))) {
      return null;
    }
    const backoff = this.retry.baseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
    const after = retryAfterSeconds(response.headers.get('retry-after'));
    const ms = after === null ? Math.min(backoff, this.retry.maxDelayMs) : after * 1000;
    return ms > this.retry.maxDelayMs ? null : { ms, code };
  }

  private noteCredits(response: Response): void {
    const value = response.headers.get('x-credits-remaining');
    if (value === null) return;
    this.credits = value === 'unlimited' ? 'unlimited' : Number(value);
  }
}

/** Turns every answer but a success or a 304 into the thrown error of its problem code. */
const throwProblems: Middleware = {
  async onResponse({ response }) {
    if (response.ok || response.status === 304) return undefined;
    throw await errorOf(response);
  },
};
