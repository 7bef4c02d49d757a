import { expect } from 'chai';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createAccountWithKey, setRateLimit } from '../../commands/manage-keys/keys.handler.js';
import { runExport } from '../../commands/export-bundles/export-run.handler.js';
import {
  BadRequestError,
  CostExceedsMaxError,
  CreditsExhaustedError,
  CursorInvalidError,
  ERROR_CLASSES,
  NotFoundError,
  RateLimitedError,
  ScoresApiError,
  ScoresClient,
  TierError,
  UnauthorizedError,
  WebhookVerificationError,
  verifyWebhook,
  type HistoryRow,
  type RetryEvent,
} from '../../clients/typescript/src/index.js';
import { until } from '../support/processes.js';
import { startHttpsReceiver, type HttpsReceiver } from '../support/receiver-certificate.js';
import { demoKey, startTestServer, type TestServer } from '../support/server.js';

// About 370 trading days of the demo: 232,000 history rows, more than one call returns (200,000),
// so a whole-history sync takes two pages and can be stopped between them.
const NOW = '2020-06-30T23:00:00Z';
const key = (r: { ticker: string; date: string }) => `${r.ticker}|${r.date}`;
/** By ticker, then date. */
const byTickerThenDate = (a: string, b: string) => {
  const [ta = '', da = ''] = a.split(',');
  const [tb = '', db = ''] = b.split(',');
  return ta === tb ? (da < db ? -1 : da > db ? 1 : 0) : ta < tb ? -1 : 1;
};

/**
 * The mirror's local store: the rows by ticker and date and the cursor, saved together (one file,
 * written to a temp name and renamed) after each page, so a crash leaves the rows and the cursor
 * of the same page.
 */
class FileStore {
  rows = new Map<string, HistoryRow>();
  cursor: string | null = null;
  constructor(private readonly file: string) {
    if (existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { cursor: string; rows: HistoryRow[] };
      this.cursor = saved.cursor;
      for (const r of saved.rows) this.rows.set(key(r), r);
    }
  }
  save(rows: HistoryRow[], cursor: string): void {
    for (const r of rows) this.rows.set(key(r), r);
    this.cursor = cursor;
    writeFileSync(`${this.file}.tmp`, JSON.stringify({ cursor, rows: [...this.rows.values()] }));
    renameSync(`${this.file}.tmp`, this.file);
  }
}

/** A CSV row of scores_history.csv.gz in the API's spelling: numbers as JSON prints them, restated_at to the second. */
function apiSpelling(csvRow: string): string {
  const [ticker, date, ms, ws, ss, gap, estimated, restated] = csvRow.split(',');
  const num = (t: string | undefined) => (t === '' || t === undefined ? 'null' : String(Number(t)));
  return [ticker, date, num(ms), num(ws), num(ss), num(gap), estimated, restated!.slice(0, 19).replace('T', ' ')].join(',');
}
const rowSpelling = (r: HistoryRow) =>
  [r.ticker, r.date, r.main_street, r.wall_street, r.service_score, r.divergence_gap ?? 'null', r.estimated, r.restated_at].join(',');

describe('The TypeScript SDK (clients/typescript) against a live server', function () {
  this.timeout(300_000);
  let server: TestServer;
  let quant = '';
  let dir = '';
  let receiver: HttpsReceiver | undefined;
  let receiverUrl = '';
  const client = (apiKey: string, extra: Partial<ConstructorParameters<typeof ScoresClient>[0]> = {}) => new ScoresClient({ apiKey, baseUrl: server.url, ...extra });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'scores-sdk-ts-'));
    receiver = await startHttpsReceiver(dir);
    receiverUrl = `https://127.0.0.1:${receiver.port}/hooks`;
    server = await startTestServer({ now: NOW, env: { WEBHOOK_CA_FILE: receiver.caFile, WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8' } });
    quant = demoKey(server.dir, 'quant');
  });
  after(async () => {
    await server?.stop();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('The mirror: the whole multi-ticker history of a quant key into a local store', () => {
    it('syncs page by page, stops after the first, resumes from the saved cursor in a new process state, and ends with exactly the rows of the same day\'s scores_history.csv.gz, the credits charged equal to the rows received', async () => {
      const file = join(dir, 'mirror.json');
      const first = client(quant);
      await first.GET('/v1/usage');
      const before = first.credits;
      expect(before).to.be.a('number');
      let received = 0;

      // Run 1: one page, then stop (as a crash would, between two pages).
      const store1 = new FileStore(file);
      expect(store1.cursor).to.equal(null);
      let stoppedWithMore = false;
      for await (const page of first.syncHistory({ since: store1.cursor })) {
        store1.save(page.rows, page.nextSince);
        received += page.rows.length;
        stoppedWithMore = page.hasMore;
        break;
      }
      expect(stoppedWithMore, 'the history is more than one page').to.equal(true);
      expect(received).to.equal(200_000);

      // Run 2: a new client and the store read back from disk, from its saved cursor.
      const second = client(quant);
      const store2 = new FileStore(file);
      expect(store2.rows.size).to.equal(200_000);
      expect(store2.cursor).to.equal(store1.cursor);
      let pages = 0;
      for await (const page of second.syncHistory({ since: store2.cursor })) {
        store2.save(page.rows, page.nextSince);
        received += page.rows.length;
        pages++;
      }
      expect(pages).to.equal(1);
      await second.GET('/v1/usage');
      expect((before as number) - (second.credits as number), 'credits charged').to.equal(received);

      // A poll now brings nothing and costs nothing.
      for await (const page of second.syncHistory({ since: store2.cursor })) expect(page.rows).to.have.length(0);
      await second.GET('/v1/usage');
      expect((before as number) - (second.credits as number)).to.equal(received);

      // The same day's Backtest Pack, downloaded with the SDK.
      const s = server.services;
      const run = await runExport({ events: s.events, reads: s.reads, files: s.exportFiles, clock: s.clock, ids: s.ids }, { trigger: 'cli' });
      expect(run.status).to.equal('completed');
      let listed: { name: string; url: string; row_count: number }[] = [];
      await until(async () => {
        listed = (await second.GET('/v1/bulk/exports')).data!.exports;
        return listed.length === 3;
      }, 20_000, 100);
      const history = listed.find((f) => f.name === 'scores_history.csv.gz')!;
      const bundle = history.url.split('/').at(-2)!;
      const { data: gz } = await second.GET('/v1/bulk/exports/{bundle_id}/{name}', { params: { path: { bundle_id: bundle, name: 'scores_history.csv.gz' } }, parseAs: 'arrayBuffer' });
      const lines = gunzipSync(Buffer.from(gz as ArrayBuffer)).toString('utf8').trimEnd().split('\n');
      expect(lines[0]).to.equal('ticker,date,main_street,wall_street,service_score,divergence_gap,estimated,restated_at');
      // Both by ticker, then date (the file's own order is by its month buckets' keys).
      const exported = lines.slice(1).map(apiSpelling).sort(byTickerThenDate);
      const mirrored = [...store2.rows.values()].map(rowSpelling).sort(byTickerThenDate);
      expect(exported.length).to.equal(history.row_count);
      expect(mirrored.length, 'rows held').to.equal(exported.length);
      expect(received, 'rows received: each once').to.equal(exported.length);
      const firstDiff = exported.findIndex((row, i) => row !== mirrored[i]);
      expect(firstDiff, `first differing row: export ${exported[firstDiff]} / mirror ${mirrored[firstDiff]}`).to.equal(-1);
    });
  });

  describe('Errors, credits and retries', () => {
    it('throws the typed error of each problem code, with the problem, its request id and its class for every code the document declares', async () => {
      const c = client(quant);
      const caught = async (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e);
      const notFound = await caught(c.GET('/v1/scores/{ticker}', { params: { path: { ticker: 'ZZZZZ' } } }));
      expect(notFound).to.be.instanceOf(NotFoundError).and.instanceOf(ScoresApiError);
      expect((notFound as NotFoundError).status).to.equal(404);
      expect((notFound as NotFoundError).requestId).to.match(/^req_/);
      const bad = (await caught(c.GET('/v1/scores/{ticker}/history', { params: { path: { ticker: 'AAPL' }, query: { start: '2020-13-45' } } }))) as BadRequestError;
      expect(bad).to.be.instanceOf(BadRequestError);
      expect(bad.problem.errors?.[0]?.parameter).to.equal('start');
      expect(await caught(client('sk_live_not_a_key').GET('/v1/usage'))).to.be.instanceOf(UnauthorizedError);
      const tier = (await caught(client(demoKey(server.dir, 'free')).GET('/v1/divergence/events'))) as TierError;
      expect(tier).to.be.instanceOf(TierError);
      expect(tier.code).to.equal('tier');
      const cursor = await caught(c.syncHistory({ tickers: ['AAPL'], since: 'c1_bm90LWEtY3Vyc29y' }).next());
      expect(cursor).to.be.instanceOf(CursorInvalidError);
      // The document has one problem schema per code, ProblemDetails their union.
      type Schema = { $ref?: string; oneOf?: Schema[]; anyOf?: Schema[]; properties?: { code?: { enum?: string[] } } };
      const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { components: { schemas: Record<string, Schema> } };
      const schemas = doc.components.schemas;
      const union = schemas['ProblemDetails']!;
      const codes = (union.oneOf ?? union.anyOf ?? []).flatMap((s) => schemas[s.$ref!.split('/').pop()!]!.properties!.code!.enum!);
      expect(codes).to.have.length.above(10);
      expect(Object.keys(ERROR_CLASSES).sort()).to.deep.equal(codes.sort());
    });

    it("reads X-Credits-Remaining: a number that falls by each call's price, 'unlimited' on an unmetered key", async () => {
      const c = client(quant);
      await c.GET('/v1/usage');
      const start = c.credits as number;
      const { data } = await c.GET('/v1/scores/{ticker}/history', { params: { path: { ticker: 'MSFT' }, query: { start: '2020-06-01' } } });
      expect(c.credits).to.equal(start - data!.rows.length);
      const enterprise = client(demoKey(server.dir, 'enterprise'));
      await enterprise.GET('/v1/usage');
      expect(enterprise.credits).to.equal('unlimited');
    });

    it('prices a call before making it (price), caps a call (withBudget) and every call (maxCredits), charging nothing for either refusal', async () => {
      const k = await createAccountWithKey(server.services, { tier: 'quant' });
      await server.services.runner.waitForHead();
      const c = client(k.key);
      const priced = await c.price((dry) => dry.getScoreHistory('MSFT', { start: '2020-06-01' }));
      expect(priced.cost).to.be.above(5);
      expect(c.credits).to.be.a('number');
      const before = c.credits as number;
      const error = await c.withBudget({ maxCredits: priced.cost - 1 }).getScoreHistory('MSFT', { start: '2020-06-01' }).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(CostExceedsMaxError);
      expect((error as CostExceedsMaxError).problem).to.include({ max_credits: priced.cost - 1 });
      const capped = new ScoresClient({ apiKey: k.key, baseUrl: server.url, maxCredits: 1 });
      expect(await capped.getScore('AAPL').catch((e: unknown) => e)).to.be.instanceOf(CostExceedsMaxError);
      const history = await c.withBudget({ maxCredits: priced.cost }).getScoreHistory('MSFT', { start: '2020-06-01' });
      expect(history.rows.length).to.equal(priced.cost);
      expect(c.credits).to.equal(before);
      await c.getUsage();
      expect(c.credits).to.equal(before - priced.cost);
      expect(await c.price((dry) => dry.getUpcomingEarnings()).then(() => null, (e: unknown) => e)).to.equal(null);
      const free = await createAccountWithKey(server.services, { tier: 'free' });
      await server.services.runner.waitForHead();
      expect(await client(free.key).price((dry) => dry.getUpcomingEarnings()).catch((e: unknown) => e)).to.be.instanceOf(TierError);
    });

    it('retries 429 rate_limited after Retry-After until the call succeeds', async () => {
      const k = await createAccountWithKey(server.services, { tier: 'quant' });
      await setRateLimit(server.services, k.account_id, 1);
      await server.services.runner.waitForHead();
      const retries: RetryEvent[] = [];
      const statuses: number[] = [];
      const c = client(k.key, {
        onRetry: (e) => retries.push(e),
        fetch: async (req) => {
          const res = await fetch(req);
          statuses.push(res.status);
          return res;
        },
      });
      for (let i = 0; i < 5; i++) expect((await c.GET('/v1/usage')).data!.tier).to.equal('quant');
      expect(statuses.filter((s) => s === 429).length).to.be.at.least(1);
      expect(statuses.filter((s) => s === 200)).to.have.length(5);
      expect(retries.length).to.equal(statuses.filter((s) => s === 429).length);
      for (const r of retries) {
        expect(r.code).to.equal('rate_limited');
        expect(r.delayMs).to.be.at.least(1000); // the server's Retry-After, in whole seconds
      }
    });

    it('gives up on rate_limited after maxRetries, throwing RateLimitedError with its Retry-After', async () => {
      const k = await createAccountWithKey(server.services, { tier: 'quant' });
      await setRateLimit(server.services, k.account_id, 1);
      await server.services.runner.waitForHead();
      const c = client(k.key, { retry: { maxRetries: 0 } });
      const answers = await Promise.allSettled(Array.from({ length: 6 }, () => c.GET('/v1/usage')));
      const refused = answers.flatMap((a) => (a.status === 'rejected' ? [a.reason as unknown] : []));
      expect(refused.length).to.be.at.least(1);
      for (const e of refused) {
        expect(e).to.be.instanceOf(RateLimitedError);
        expect((e as RateLimitedError).retryAfter).to.be.at.least(1);
      }
    });

    it('never retries 429 credits_exhausted: one request, CreditsExhaustedError', async () => {
      const k = await createAccountWithKey(server.services, { tier: 'free' });
      await server.services.runner.waitForHead();
      await server.services.ledger.debit(k.account_id, { request_id: 'sdk-drain', endpoint: 'history', channel: 'rest', cost: 1_000 });
      let sent = 0;
      const retries: RetryEvent[] = [];
      const c = client(k.key, { onRetry: (e) => retries.push(e), fetch: (req) => (sent++, fetch(req)) });
      const error = await c.GET('/v1/scores/{ticker}', { params: { path: { ticker: 'AAPL' } } }).then(() => null, (e: unknown) => e);
      expect(error).to.be.instanceOf(CreditsExhaustedError);
      expect((error as CreditsExhaustedError).status).to.equal(429);
      expect(sent).to.equal(1);
      expect(retries).to.deep.equal([]);
      expect(c.credits).to.equal(0);
    });
  });

  describe('verifyWebhook', () => {
    it('accepts a real test delivery by both signatures, and refuses an altered body, a wrong secret and a stale timestamp', async () => {
      const c = client(quant);
      const { data: hook } = await c.POST('/v1/webhooks', { body: { event_type: 'score_move', url: receiverUrl } });
      const { data: test } = await c.POST('/v1/webhooks/{webhook_id}/test', { params: { path: { webhook_id: hook!.id } } });
      expect(test!.ok).to.equal(true);
      const delivery = receiver!.received.at(-1)!;
      // The server signs on its transport clock, the wall clock, whatever NOW pins for the data.
      const now = Date.now();
      const envelope = verifyWebhook({ secret: hook!.secret, body: delivery.body, headers: delivery.headers, now });
      expect(envelope.test).to.equal(true);
      expect(envelope.events[0]!.type).to.equal('score_move');
      // Each signature alone.
      const { 'webhook-signature': _sw, ...serviceOnly } = delivery.headers;
      expect(verifyWebhook({ secret: hook!.secret, body: delivery.body, headers: serviceOnly }).source).to.equal('scores-service');
      const { 'x-service-signature': _ss, ...standardOnly } = delivery.headers;
      expect(verifyWebhook({ secret: hook!.secret, body: Buffer.from(delivery.body), headers: standardOnly, now }).source).to.equal('scores-service');
      const refuse = (o: Parameters<typeof verifyWebhook>[0]) => expect(() => verifyWebhook(o)).to.throw(WebhookVerificationError);
      refuse({ secret: hook!.secret, body: delivery.body.replace('score_move', 'score_mové'), headers: serviceOnly });
      refuse({ secret: hook!.secret, body: delivery.body.replace('score_move', 'score_mové'), headers: standardOnly, now });
      refuse({ secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`, body: delivery.body, headers: delivery.headers, now });
      refuse({ secret: hook!.secret, body: delivery.body, headers: standardOnly, now: now + 10 * 60_000 });
      refuse({ secret: hook!.secret, body: delivery.body, headers: {} });
      await c.DELETE('/v1/webhooks/{webhook_id}', { params: { path: { webhook_id: hook!.id } } });
    });

    it('accepts a delivery during a secret rotation\'s overlap with the old secret and with the new one', async () => {
      const c = client(quant);
      const { data: hook } = await c.POST('/v1/webhooks', { body: { event_type: 'score_move', url: receiverUrl } });
      const { data: rotated } = await c.POST('/v1/webhooks/{webhook_id}/rotate-secret', { params: { path: { webhook_id: hook!.id } }, body: { overlap_hours: 1 } });
      const { data: test } = await c.POST('/v1/webhooks/{webhook_id}/test', { params: { path: { webhook_id: hook!.id } } });
      expect(test!.ok).to.equal(true);
      const delivery = receiver!.received.at(-1)!;
      for (const secret of [hook!.secret, rotated!.secret]) expect(verifyWebhook({ secret, body: delivery.body, headers: delivery.headers, now: Date.now() }).test).to.equal(true);
      expect(() => verifyWebhook({ secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`, body: delivery.body, headers: delivery.headers, now: Date.now() })).to.throw(WebhookVerificationError);
      await c.DELETE('/v1/webhooks/{webhook_id}', { params: { path: { webhook_id: hook!.id } } });
    });
  });
});
