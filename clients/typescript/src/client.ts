import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { errorOf, retryAfterSeconds, ScoresConfigurationError, ScoresNetworkError, type ErrorCode } from './errors.js';
import { Operations } from './generated/operations.js';
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

/** A retry about to happen: after an answer (`status`, `code`), or after none (`error`, and `status` null). */
export interface RetryEvent {
  attempt: number;
  delayMs: number;
  status: number | null;
  code: ErrorCode | null;
  error?: string;
}

export interface ScoresClientOptions {
  /** Sent as `X-API-Key` on every request; default `SCORES_API_KEY` from the environment. */
  apiKey?: string;
  /** Default `SCORES_BASE_URL` from the environment, else `http://localhost:8080` (what `npm start` serves). */
  baseUrl?: string;
  /** Each attempt's limit in milliseconds (default 120,000); a timed-out GET or DELETE is retried. */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Called before each retry (for logs and metrics). */
  onRetry?: (event: RetryEvent) => void;
  /** The fetch to use (default the global one). */
  fetch?: (input: Request) => Promise<Response>;
  /**
   * The most any read of this client may cost, in credits (`X-Max-Credits`): a call that would
   * cost more throws `CostExceedsMaxError` and is charged nothing. `withBudget` sets another for some calls.
   */
  maxCredits?: number;
}

/** What a dry run said a call would cost (`ScoresClient.price`). */
export interface Price {
  /** Credits the call would cost now (`X-Credits-Cost`). */
  cost: number;
  /** The balance, untouched (`X-Credits-Remaining`). */
  credits: Credits;
}

/** The API's paths and schemas, typed from the OpenAPI document (openapi-typescript). */
export type ScoresApi = Client<paths>;

/** What `npm start` serves; `SCORES_BASE_URL` or `baseUrl` name another server. */
export const DEFAULT_BASE_URL = 'http://localhost:8080';
const env = (name: string): string | undefined => (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[name] || undefined;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Methods whose retry after a 502/503/504 cannot do anything twice. */
const IDEMPOTENT = new Set(['GET', 'DELETE']);

/**
 * A Scores API client: a typed method per operation (`getScore`, `getScoreHistory`, `listThemes`,
 * ...; `OPERATIONS` lists them), and openapi-fetch's `GET`, `POST` and `DELETE` typed on the
 * document's paths. Every failure throws a `ScoresError`: the `ScoresApiError` subclass of its
 * problem `code`, `ScoresHttpError` or `ScoresNetworkError`. `429 rate_limited` and, on GET and
 * DELETE, `502`/`503`/`504` and network errors (connection refused or reset, timeouts) are retried
 * with backoff, honouring `Retry-After`; `429 credits_exhausted` never is.
 *
 * ```ts
 * const scores = new ScoresClient(); // SCORES_API_KEY, SCORES_BASE_URL
 * const history = await scores.getScoreHistory('AAPL', { start: new Date('2024-01-01') });
 * console.log(history.rows.length, scores.credits);
 * ```
 */
export class ScoresClient extends Operations {
  readonly api: ScoresApi;
  readonly GET: ScoresApi['GET'];
  readonly POST: ScoresApi['POST'];
  readonly DELETE: ScoresApi['DELETE'];
  readonly baseUrl: string;
  /** `X-Credits-Remaining` of the latest answer that carried it: a number, or `unlimited`; null before any. */
  credits: Credits | null = null;
  /** `X-Key-Budget-Remaining` of the latest answer that carried it: what this key may still spend under its daily and monthly limits; null before any, or for a key without a limit. */
  keyBudget: number | null = null;
  /** `X-Credits-Cost` of the latest answer that carried it: what that call cost (or, on a dry run, would cost). */
  lastCost: number | null = null;
  private readonly retry: Required<RetryOptions>;

  constructor(
    private readonly options: ScoresClientOptions = {},
    /** Set by `price`: every request of this client is a dry run. */
    private readonly dryRun = false,
  ) {
    super();
    const apiKey = options.apiKey ?? env('SCORES_API_KEY');
    if (!apiKey?.trim()) throw new ScoresConfigurationError('no API key: pass apiKey or set SCORES_API_KEY');
    this.baseUrl = (options.baseUrl ?? env('SCORES_BASE_URL') ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    if (!/^https?:\/\//.test(this.baseUrl)) throw new ScoresConfigurationError(`baseUrl (or SCORES_BASE_URL) must be an http(s) URL, got ${JSON.stringify(this.baseUrl)}`);
    this.retry = { maxRetries: 4, baseDelayMs: 500, maxDelayMs: 60_000, ...options.retry };
    const send = options.fetch ?? ((input: Request) => globalThis.fetch(input));
    this.api = createClient<paths>({
      baseUrl: this.baseUrl,
      headers: { 'X-API-Key': apiKey },
      // `tickers` is one comma-separated parameter (style form, explode false).
      querySerializer: { array: { style: 'form', explode: false } },
      fetch: (request) => this.withRetries(request, send),
    });
    this.api.use(throwProblems);
    this.api.use(budgetHeaders(options.maxCredits, dryRun));
    this.GET = this.api.GET;
    this.POST = this.api.POST;
    this.DELETE = this.api.DELETE;
  }

  /**
   * A client like this one whose reads may cost at most `maxCredits` each: `await
   * scores.withBudget({ maxCredits: 500 }).getMultiTickerHistory({ tickers: ['AAPL'] })`. Its
   * balance and key budget are its own; the key, retries and base URL are this client's.
   */
  withBudget(budget: { maxCredits?: number }): ScoresClient {
    const { maxCredits: _default, ...options } = this.options;
    return new ScoresClient(budget.maxCredits === undefined ? options : { ...options, maxCredits: budget.maxCredits });
  }

  /**
   * What a call would cost now, without running or charging it (`X-Dry-Run: true`): `run` makes
   * the call on a dry-run copy of this client, e.g. `await scores.price((c) =>
   * c.getMultiTickerHistory({}))`. Throws what the call would throw (`TierError`,
   * `CreditsExhaustedError` with the cost, `CostExceedsMaxError` over this client's maximum, ...).
   */
  async price(run: (dry: ScoresClient) => Promise<unknown>): Promise<Price> {
    const dry = new ScoresClient(this.options, true);
    await run(dry);
    if (dry.lastCost === null || dry.credits === null) throw new ScoresConfigurationError('the call priced made no read with a price (a dry run prices GET operations)');
    this.credits = dry.credits;
    return { cost: dry.lastCost, credits: dry.credits };
  }

  /** The history of many tickers, page by page, from a saved `next_since` (see ./sync.ts). */
  syncHistory(options: SyncOptions = {}): AsyncGenerator<SyncPage, void, undefined> {
    return syncHistory(this, options);
  }

  private async withRetries(request: Request, send: (input: Request) => Promise<Response>): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.attempt(request, send);
      } catch (error) {
        if (request.signal.aborted) throw error; // the caller's own abort is not a network error
        const ms = transient(error) ? this.networkDelay(request.method, attempt) : null;
        if (ms === null) throw new ScoresNetworkError(request.method, request.url, error);
        this.options.onRetry?.({ attempt: attempt + 1, delayMs: ms, status: null, code: null, error: describeError(error) });
        await sleep(ms);
        continue;
      }
      this.noteCredits(response);
      const wait = await this.retryDelay(request.method, response, attempt);
      if (wait === null) return response;
      this.options.onRetry?.({ attempt: attempt + 1, delayMs: wait.ms, status: response.status, code: wait.code });
      await response.body?.cancel();
      await sleep(wait.ms);
    }
  }

  /** One attempt, ended after `timeoutMs` (or by the caller's signal). */
  private attempt(request: Request, send: (input: Request) => Promise<Response>): Promise<Response> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 120_000);
    return send(new Request(request.clone(), { signal: AbortSignal.any([request.signal, timeout]) }));
  }

  /** How long to wait before retrying a request that got no answer, or null to throw. */
  private networkDelay(method: string, attempt: number): number | null {
    if (attempt >= this.retry.maxRetries || !IDEMPOTENT.has(method)) return null;
    return Math.min(this.backoff(attempt), this.retry.maxDelayMs);
  }

  private backoff(attempt: number): number {
    return this.retry.baseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
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
    const backoff = this.backoff(attempt);
    const after = retryAfterSeconds(response.headers.get('retry-after'));
    const ms = after === null ? Math.min(backoff, this.retry.maxDelayMs) : after * 1000;
    return ms > this.retry.maxDelayMs ? null : { ms, code };
  }

  private noteCredits(response: Response): void {
    const value = response.headers.get('x-credits-remaining');
    if (value !== null) this.credits = value === 'unlimited' ? 'unlimited' : Number(value);
    const budget = response.headers.get('x-key-budget-remaining');
    if (budget !== null) this.keyBudget = Number(budget);
    const cost = response.headers.get('x-credits-cost');
    if (cost !== null) this.lastCost = Number(cost);
  }
}

/** Codes of a connection refused, reset or cut, or a name lookup that may succeed later (undici's and node's). */
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CLOSED']);
/** A failure a retry may cure: a timeout, or fetch's "fetch failed" over one of those codes. */
function transient(error: unknown): boolean {
  if (error instanceof Error && error.name === 'TimeoutError') return true;
  const cause = error instanceof Error ? (error.cause as { code?: unknown; cause?: { code?: unknown } } | undefined) : undefined;
  const code = cause?.code ?? cause?.cause?.code;
  return typeof code === 'string' && TRANSIENT_CODES.has(code);
}

const describeError = (e: unknown): string => {
  if (!(e instanceof Error)) return String(e);
  const cause = e.cause as { code?: unknown; message?: unknown } | undefined;
  return `${e.name}: ${typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : e.message}`;
};

/**
 * `X-Max-Credits` and `X-Dry-Run` on every read: the server takes them on GETs only (a dry run of a
 * write is refused), so writes go without.
 */
function budgetHeaders(maxCredits: number | undefined, dryRun: boolean): Middleware {
  return {
    onRequest({ request }) {
      if (request.method !== 'GET') return undefined;
      if (maxCredits !== undefined) request.headers.set('X-Max-Credits', String(maxCredits));
      if (dryRun) request.headers.set('X-Dry-Run', 'true');
      return request;
    },
  };
}

/** Turns every answer but a success or a 304 into the thrown error of its problem code. */
const throwProblems: Middleware = {
  async onResponse({ response }) {
    if (response.ok || response.status === 304) return undefined;
    throw await errorOf(response);
  },
};
