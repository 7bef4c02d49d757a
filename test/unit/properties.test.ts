/**
 * Property tests (issue 20, item 5): the ledger decider, the ingest parser, the parameter parsers
 * of every endpoint and the MCP tools' argument schemas, on generated input (fast-check), with a
 * fixed seed and a bounded number of runs (a few seconds in all).
 */
import { SIGNAL_ALERT_TYPES, THEME_RELATIONSHIPS } from '../../src/domain/scores/reference.events.js';
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { decideAndFold, ledgerDecider } from '../../src/domain/ledger/ledger.decider.js';
import { quotePro, quoteUpgrade } from '../../src/domain/ledger/plan-quotes.js';
import type { LedgerCommand } from '../../src/domain/ledger/ledger.commands.js';
import { IngestValidationError, parseIngestFile } from '../../commands/ingest/ingest.parser.js';
import { INGEST_KINDS, type IngestKind } from '../../commands/ingest/ingest.schema.js';
import { AppError, type ErrorCode } from '../../src/core/errors.js';
import { parseIntParam, parseOptionalIntParam, type IntParamRule } from '../../src/web/int-param.js';
import { creditsRemainingHeader, creditsRemainingNumber, stateAt } from '../../src/domain/ledger/ledger.figures.js';
import { foldLedger, initialLedgerState, type LedgerState } from '../../src/domain/ledger/ledger.state.js';
import { TIERS, type Tier } from '../../src/domain/plans.js';
import { RATE_CARD, type RateKey } from '../../src/domain/rate-card.js';
import { parseWebhookId } from '../../src/web/webhook-id.js';
import { ledgerLines, packDebits, verifyChain, type LedgerEvent } from '../../src/domain/ledger/ledger.events.js';
import { parseDirection } from '../../queries/get-divergence/get-divergence.query.js';
import { parseInstantParam } from '../../queries/shared/instants.js';
import { parseDateParam } from '../../queries/shared/params.js';
import { MAX_TICKERS_PER_CALL, parseTickerList, tickerFromPath } from '../../queries/shared/tickers.js';
import fc, { type Arbitrary } from 'fast-check';

const { decide } = ledgerDecider;

// defaultSizeToMaxWhenMaxSpecified: a length, key count or depth ranges up to the maximum given,
// not up to fast-check's default "small" size (about 10).
fc.configureGlobal({ seed: 20261125, numRuns: 100, defaultSizeToMaxWhenMaxSpecified: true });

/** One of `chars`, as the unit of fc.string. */
const charOf = (chars: readonly string[]): Arbitrary<string> => fc.constantFrom(...chars);

/** Any UTF-16 string: controls, unpaired surrogates and astral characters included (unit 'binary' never gives a lone surrogate). */
const utf16 = (maxLength: number): Arbitrary<string> =>
  fc.string({
    maxLength,
    unit: fc.oneof(
      fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c)),
      fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
      fc.integer({ min: 0x10000, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
      fc.string({ minLength: 1, maxLength: 1 }),
    ),
  });

/** A JSON value as JSON.parse builds it (plain objects, "__proto__" an own key), nesting up to `maxDepth`, object keys from `key`. */
const jsonValue = (maxDepth: number, key: Arbitrary<string> = fc.string({ maxLength: 8 })): Arbitrary<unknown> =>
  fc.anything({
    key,
    maxDepth,
    maxKeys: 4,
    values: [fc.constant(null), fc.boolean(), fc.integer({ min: -1e6, max: 1e6 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ maxLength: 12 }), utf16(6)],
  });

const DAY = 86_400_000;
const RATE_KEYS = Object.keys(RATE_CARD) as RateKey[];

/** What a refusal must be: an AppError with one of `codes`. */
function expectAppError(err: unknown, codes: readonly ErrorCode[], what: string): AppError {
  if (!(err instanceof AppError)) throw new Error(`${what}: threw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}, not an AppError`);
  expect(codes, `${what}: code ${err.code} (${err.detail})`).to.include(err.code);
  return err;
}

// -------------------------------------------------------------------------------------------------
// (a) The ledger decider

type Step =
  | { kind: 'debit'; cost: number; endpoint: RateKey; channel: 'rest' | 'mcp' }
  | { kind: 'debit-again' }
  | { kind: 'pack'; ref: string; credits: number }
  | { kind: 'plan'; tier: Tier }
  | { kind: 'overage'; on: boolean }
  | { kind: 'pro'; on: boolean }
  | { kind: 'cancel' }
  | { kind: 'downgrade'; tier: Tier }
  | { kind: 'upgrade'; tier: Tier }
  | { kind: 'start-pro' }
  | { kind: 'sweep' }
  | { kind: 'clock'; ms: number };

const tier = fc.constantFrom<Tier>(...TIERS);
const cost = fc.oneof(fc.nat(5), fc.nat(300), fc.nat(30_000), fc.nat(3_000_000));
const debitStep: Arbitrary<Step> = fc.record({
  kind: fc.constant('debit' as const),
  cost,
  endpoint: fc.constantFrom(...RATE_KEYS),
  channel: fc.constantFrom<'rest' | 'mcp'>('rest', 'mcp'),
});
const step: Arbitrary<Step> = fc.oneof(
  debitStep,
  debitStep,
  debitStep,
  debitStep,
  fc.constant<Step>({ kind: 'debit-again' }),
  // Few references and few sizes: the same purchase again, and a reference reused for another size.
  fc.record({ kind: fc.constant('pack' as const), ref: fc.constantFrom('p0', 'p1', 'p2', '__proto__', 'constructor'), credits: fc.constantFrom(100, 1_000, 50_000) }),
  fc.record({ kind: fc.constant('plan' as const), tier }),
  fc.record({ kind: fc.constant('overage' as const), on: fc.boolean() }),
  fc.record({ kind: fc.constant('pro' as const), on: fc.boolean() }),
  fc.constant<Step>({ kind: 'cancel' }),
  fc.record({ kind: fc.constant('downgrade' as const), tier }),
  fc.record({ kind: fc.constant('upgrade' as const), tier }),
  fc.constant<Step>({ kind: 'start-pro' }),
  fc.constant<Step>({ kind: 'sweep' }),
  // The clock: often still (debits of one instant, as the handler batches them), sometimes weeks.
  fc.record({ kind: fc.constant('clock' as const), ms: fc.oneof(fc.nat(60_000), fc.nat(3 * DAY), fc.nat(45 * DAY)) }),
);
const script = fc.record({
  tier,
  pro: fc.boolean(),
  start: fc.nat(365 * DAY - 1).map((ms) => Date.parse('2024-01-01T00:00:00Z') + ms),
  steps: fc.array(step, { minLength: 1, maxLength: 60 }),
});
type Script = { tier: Tier; pro: boolean; start: number; steps: Step[] };

interface Run {
  state: LedgerState;
  log: LedgerEvent[];
  /** request_id of every debit the decider accepted with a cost, once per acceptance. */
  charged: string[];
  refused: number;
}

/** Credits the account can still spend without overage: allowance left (never below 0) plus prepaid. */
const spendable = (s: LedgerState): number => (s.allowance === null ? Infinity : Math.max(0, s.allowance - s.used_allowance - s.overage_credits) + s.prepaid);

/** Plays a script through decideAndFold, checking the per-decision invariants; returns the log. */
function play({ tier: openTier, pro, start, steps }: Script): Run {
  let now = new Date(start);
  const opened = decideAndFold(initialLedgerState, { type: 'OpenLedger', data: { account_id: 'acct_prop', tier: openTier, pro } }, now);
  const run: Run = { state: opened.state, log: [...opened.events], charged: [], refused: 0 };
  let lastDebit: LedgerCommand | null = null;
  let seq = 0;
  for (const s of steps) {
    if (s.kind === 'clock') {
      now = new Date(now.getTime() + s.ms);
      continue;
    }
    const before = run.state;
    const seen = stateAt(before, now);
    let command: LedgerCommand;
    switch (s.kind) {
      case 'debit':
        command = { type: 'DebitCredits', data: { request_id: `req_${++seq}`, endpoint: s.endpoint, channel: s.channel, cost: s.cost } };
        lastDebit = command;
        break;
      case 'debit-again':
        if (!lastDebit) continue;
        command = lastDebit;
        break;
      case 'pack':
        command = { type: 'PurchasePack', data: { pack_id: s.ref, credits: s.credits } };
        break;
      case 'plan':
        command = { type: 'SetPlan', data: { tier: s.tier } };
        break;
      case 'overage':
        command = { type: 'SwitchOverage', data: { on: s.on } };
        break;
      case 'pro':
        command = { type: 'SetPro', data: { on: s.on } };
        break;
      case 'cancel':
        command = { type: 'CancelPlan' };
        break;
      case 'downgrade':
        command = { type: 'DowngradePlan', data: { tier: s.tier } };
        break;
      case 'upgrade': {
        let amount = 0;
        try {
          amount = quoteUpgrade(seen, s.tier, now).amount_cents;
        } catch {
          // Not an upgrade: the decider must refuse it too.
        }
        command = { type: 'UpgradePlan', data: { tier: s.tier, amount_cents: amount, payment_ref: `pay_${++seq}` } };
        break;
      }
      case 'start-pro': {
        let amount = 0;
        try {
          amount = quotePro(seen, now).amount_cents;
        } catch {
          // Already a member: refused.
        }
        command = { type: 'StartPro', data: { amount_cents: amount, payment_ref: `pay_${++seq}` } };
        break;
      }
      case 'sweep':
        command = { type: 'CloseFinishedMonths' };
        break;
      default: {
        const _never: never = s;
        throw new Error(`unknown step ${JSON.stringify(_never)}`);
      }
    }
    let out: { events: LedgerEvent[]; state: LedgerState };
    try {
      out = decideAndFold(before, command, now);
    } catch (err) {
      const e = expectAppError(err, ['credits_exhausted', 'bad_request', 'conflict'], command.type);
      run.refused++;
      if (e.code === 'credits_exhausted') {
        // Only a debit, only with overage off, and only one that does not fit.
        expect(command.type).to.equal('DebitCredits');
        expect(seen.allow_overage, 'refused for credits with overage on').to.equal(false);
        const wanted = (command as Extract<LedgerCommand, { type: 'DebitCredits' }>).data.cost;
        expect(wanted, 'refused a debit that fits').to.be.greaterThan(spendable(seen));
      }
      // A refusal records nothing: the state stays what it was.
      continue;
    }
    if (out.events.length === 0) {
      expect(out.state, `${command.type} that changed nothing`).to.equal(before);
    } else {
      expect(out.events[0]!.data.prev_hash, 'a decision chains from the state it was taken on').to.equal(before.last_hash);
    }
    const debits = out.events.filter((e): e is Extract<LedgerEvent, { type: 'CreditsDebited' }> => e.type === 'CreditsDebited');
    if (command.type === 'DebitCredits') {
      if (command.data.cost === 0) {
        expect(out.events, 'a free call records nothing').to.deep.equal([]);
      } else {
        // Exactly one line for the decided call, with its own request_id, and nothing charged twice.
        expect(debits.map((d) => d.data.request_id)).to.deep.equal([command.data.request_id]);
        const d = debits[0]!.data;
        expect(d.from_allowance + d.from_prepaid + d.from_overage).to.equal(command.data.cost);
        if (!seen.allow_overage) expect(d.from_overage, 'overage drawn with overage off').to.equal(0);
        expect(d.from_prepaid).to.be.at.most(seen.prepaid);
        run.charged.push(command.data.request_id);
      }
    } else {
      expect(debits, `${command.type} charged a call`).to.deep.equal([]);
    }
    run.log.push(...out.events);
    run.state = out.state;
    checkState(run.state, now);
  }
  return run;
}

/** What holds of every state, as decided and as it stands at `now` (a month or a cancellation due by the clock alone). */
function checkState(decided: LedgerState, now: Date): void {
  checkFigures(decided, now);
  checkFigures(stateAt(decided, now), now);
}

function checkFigures(s: LedgerState, now: Date): void {
  expect(s.prepaid, 'prepaid below zero').to.be.at.least(0);
  expect(s.overage_credits).to.be.at.least(0);
  expect(s.used_allowance).to.be.at.least(0);
  const remaining = creditsRemainingNumber(s);
  if (s.allowance === null) {
    expect(remaining).to.equal(null);
    if (s === stateAt(s, now)) expect(creditsRemainingHeader(s, now)).to.equal('unlimited');
    return;
  }
  // Never more drawn from the allowance than it holds.
  expect(s.used_allowance, 'allowance overdrawn').to.be.at.most(s.allowance);
  // Without overage this month, credits_remaining + prepaid (X-Credits-Remaining) is never below zero.
  if (s.overage_credits === 0) {
    expect(remaining! + s.prepaid, 'credits_remaining + prepaid').to.be.at.least(0);
    if (s === stateAt(s, now)) expect(Number(creditsRemainingHeader(s, now))).to.be.at.least(0);
  }
}

describe('Properties', function () {
  this.timeout(60_000);

  describe('(a) the ledger decider on random command sequences', () => {
    it('never draws the allowance or prepaid credits below zero without overage, and refuses only what does not fit', () => {
      fc.assert(fc.property(script, (s) => void play(s)));
    });

    it('records each accepted debit exactly once under its request_id, and nothing for a refused or free one', () => {
      fc.assert(
        fc.property(script, (s) => {
          const run = play(s);
          const lines = run.log.flatMap(ledgerLines);
          const debited = lines.flatMap((e) => (e.type === 'CreditsDebited' ? [e.data.request_id] : []));
          expect(debited).to.deep.equal(run.charged);
        }),
      );
    });

    it('folds the log back to the state it decided on, and keeps the pack references idempotent', () => {
      fc.assert(
        fc.property(script, (s) => {
          const run = play(s);
          expect(foldLedger(run.log)).to.deep.equal(run.state);
          const bought = run.log.flatMap((e) => (e.type === 'PackPurchased' ? [e.data.pack_id] : []));
          expect(new Set(bought).size, `a reference credited twice: ${bought.join(', ')}`).to.equal(bought.length);
          const credited = run.log.reduce((n, e) => n + (e.type === 'PackPurchased' ? e.data.credits : 0), 0);
          const drawn = run.log.flatMap(ledgerLines).reduce((n, e) => n + (e.type === 'CreditsDebited' ? e.data.from_prepaid : 0), 0);
          expect(run.state.prepaid).to.equal(credited - drawn);
        }),
      );
    });

    it('keeps a hash chain that verifies, before and after packDebits, which loses nothing', () => {
      fc.assert(
        fc.property(script, (s) => {
          const { log, state } = play(s);
          expect(verifyChain(log)).to.equal(null);
          const packed = packDebits(log);
          expect(verifyChain(packed)).to.equal(null);
          expect(packed.flatMap(ledgerLines)).to.deep.equal(log);
          expect(foldLedger(packed)).to.deep.equal(state);
          expect(packed.at(-1)?.data.hash).to.equal(state.last_hash);
          // Any edited event breaks it.
          if (log.length > 1) {
            const i = log.length >> 1;
            const edited = log.map((e, j) => (j === i ? ({ ...e, data: { ...e.data, at: '1999-01-01T00:00:00.000Z' } } as LedgerEvent) : e));
            expect(verifyChain(edited)?.index).to.equal(i);
          }
        }),
      );
    });

    it('decides a debit as a pure function: the same command on the same state gives the same events (a retried decision adds nothing)', () => {
      // The decider does not deduplicate request ids: the same debit decided again on the state
      // that already holds it is a second charge. What keeps a call from being charged twice is
      // one request_id per HTTP or MCP request (req_ and 96 random bits, src/app/http/authentication.ts)
      // and the command handler deciding a retry on the state it re-read, not on top of its own
      // earlier attempt.
      fc.assert(
        fc.property(script, debitStep, (s, d) => {
          const run = play(s);
          const now = new Date(s.start + 400 * DAY);
          const command: LedgerCommand = { type: 'DebitCredits', data: { request_id: 'req_same', endpoint: (d as { endpoint: RateKey }).endpoint, channel: 'rest', cost: (d as { cost: number }).cost } };
          let first: LedgerEvent[] | AppError;
          let second: LedgerEvent[] | AppError;
          try {
            first = decide(run.state, command, now);
          } catch (err) {
            first = expectAppError(err, ['credits_exhausted'], 'debit');
          }
          try {
            second = decide(run.state, command, now);
          } catch (err) {
            second = expectAppError(err, ['credits_exhausted'], 'debit');
          }
          if (first instanceof AppError || second instanceof AppError) {
            expect(second instanceof AppError && first instanceof AppError && second.code === first.code).to.equal(true);
            return;
          }
          expect(second).to.deep.equal(first);
          expect(first.filter((e) => e.type === 'CreditsDebited').length).to.equal(command.data.cost === 0 ? 0 : 1);
        }),
      );
    });
  });

  // -----------------------------------------------------------------------------------------------
  // (b) The ingest parser

  describe('(b) the ingest CSV/JSONL parser', () => {
    const kindOrNull = fc.option(fc.constantFrom<IngestKind>(...INGEST_KINDS));
    const format = fc.constantFrom<'csv' | 'jsonl'>('csv', 'jsonl');
    /** Text that looks a bit like either format: separators, quotes, braces, field names. */
    const fragment = fc.oneof(
      fc.constantFrom(',', ';', ':', '"', "'", '\n', '\r\n', '\r', '{', '}', '[', ']', '\\', '\u0000', '\ufeff', ' ', '\t', 'null', 'true', '1e999', '-0', 'NaN'),
      fc.constantFrom('type', 'ticker', 'date', 'main_street', 'wall_street', 'close', 'visits', 'symbol', 'company', 'slug', 'constituents', '__proto__', 'constructor', 'prototype'),
      fc.constantFrom('AAPL', '2024-01-02', '61.5', '2024-02-30', 'score', 'price', 'theme', 'signal', 'AAPL:core;TSM:x'),
      utf16(6),
    );
    const text = fc.oneof(utf16(200), fc.array(fragment, { maxLength: 80 }).map((parts) => parts.join('')));

    /** What parseIngestFile may do: return rows, or throw its validation error, nothing else. */
    function parseOrRefuse(t: string, f: 'csv' | 'jsonl', k: IngestKind | null): unknown[] | IngestValidationError {
      try {
        const rows = parseIngestFile(t, f, k);
        expect(rows).to.be.an('array');
        return rows;
      } catch (err) {
        if (!(err instanceof IngestValidationError)) throw new Error(`threw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
        expect(err.errors.length).to.be.greaterThan(0);
        for (const e of err.errors) {
          expect(e.line).to.be.a('number').and.at.least(0);
          expect(e.reason).to.be.a('string').and.not.equal('');
        }
        return err;
      }
    }

    it('never throws anything but IngestValidationError on arbitrary text, in either format', () => {
      fc.assert(fc.property(text, format, kindOrNull, (t, f, k) => void parseOrRefuse(t, f, k)), { numRuns: 400 });
    });

    it('never throws anything else on arbitrary JSON lines, and never touches Object.prototype', () => {
      const field = fc.constantFrom('type', 'ticker', 'date', 'main_street', 'wall_street', 'estimated', 'published_at', 'close', 'visits', 'symbol', 'company', 'sector', 'size_rank', 'slug', 'name', 'strength', 'constituents', 'id', 'alert_type', 'content', 'tickers', 'themes', 'created_at', '__proto__', 'constructor', 'prototype', 'toString');
      const line = fc.oneof(
        jsonValue(3, field),
        fc.dictionary(field, jsonValue(2, field), { maxKeys: 8, noNullPrototype: true }),
        fc.record({ type: fc.constantFrom<string>(...INGEST_KINDS, '__proto__', 'constructor'), ticker: fc.constantFrom('AAPL', 'aapl', ' msft ', 'TOO-LONG-TICKER'), date: fc.constantFrom('2024-01-02', '2024-02-30', '0000-01-01') }),
      );
      fc.assert(
        fc.property(fc.array(line, { minLength: 1, maxLength: 8 }), kindOrNull, (lines, k) => {
          parseOrRefuse(lines.map((l) => JSON.stringify(l)).join('\n'), 'jsonl', k);
          expect(Object.getOwnPropertyNames(Object.prototype)).to.not.include('polluted');
          expect(({} as Record<string, unknown>)['type']).to.equal(undefined);
        }),
        { numRuns: 300 },
      );
    });

    // Valid rows, and what the parser must give back for them.
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'.split('');
    const tickerText = fc.tuple(fc.string({ minLength: 1, maxLength: 10, unit: charOf(letters) }), fc.constantFrom('', '.A', '-B')).map(([a, b]) => a + b);
    const date = fc.integer({ min: Date.parse('1990-01-01'), max: Date.parse('2030-12-31') }).map((ms) => new Date(ms).toISOString().slice(0, 10));
    const instant = fc.integer({ min: Date.parse('2000-01-01'), max: Date.parse('2030-12-31') }).map((ms) => new Date(ms).toISOString());
    const tenths = (max: number) => fc.integer({ min: 0, max: max * 10 }).map((n) => n / 10);
    const words = fc.string({ minLength: 1, maxLength: 12, unit: charOf([...letters, ' ', ',', '"', '&', 'é', '—']) }).map((s) => s.trim()).filter((s) => s.length > 0);
    const listItem = fc.string({ minLength: 1, maxLength: 8, unit: charOf(letters) });

    type Valid = { kind: IngestKind; fields: Record<string, unknown>; csv: Record<string, string>; expected: Record<string, unknown> };
    const validRow: Record<IngestKind, Arbitrary<Valid>> = {
      score: fc.record({ t: tickerText, date, m: tenths(100), w: tenths(100), e: fc.option(fc.boolean()), p: fc.option(instant) }).map(({ t, date: d, m, w, e, p }) => ({
        kind: 'score' as const,
        fields: { ticker: t, date: d, main_street: m, wall_street: w, ...(e === null ? {} : { estimated: e }), ...(p === null ? {} : { published_at: p }) },
        csv: { ticker: t, date: d, main_street: String(m), wall_street: String(w), estimated: e === null ? '' : String(e), published_at: p ?? '' },
        expected: { ticker: t.toUpperCase(), date: d, main_street: m, wall_street: w, estimated: e ?? false, ...(p === null ? {} : { published_at: p }) },
      })),
      price: fc.record({ t: tickerText, date, c: fc.integer({ min: 1, max: 10_000_000 }).map((n) => n / 100) }).map(({ t, date: d, c }) => ({
        kind: 'price' as const,
        fields: { ticker: t, date: d, close: c },
        csv: { ticker: t, date: d, close: String(c) },
        expected: { ticker: t.toUpperCase(), date: d, close: c },
      })),
      visits: fc.record({ t: tickerText, date, v: fc.nat(1e9) }).map(({ t, date: d, v }) => ({
        kind: 'visits' as const,
        fields: { ticker: t, date: d, visits: v },
        csv: { ticker: t, date: d, visits: String(v) },
        expected: { ticker: t.toUpperCase(), date: d, visits: v },
      })),
      earnings: fc.record({ t: tickerText, date }).map(({ t, date: d }) => ({
        kind: 'earnings' as const,
        fields: { ticker: t, date: d },
        csv: { ticker: t, date: d },
        expected: { ticker: t.toUpperCase(), date: d },
      })),
      ticker: fc.record({ t: tickerText, c: words, s: words, r: fc.integer({ min: 1, max: 5000 }) }).map(({ t, c, s, r }) => ({
        kind: 'ticker' as const,
        fields: { symbol: t, company: c, sector: s, size_rank: r },
        csv: { symbol: t, company: c, sector: s, size_rank: String(r) },
        expected: { symbol: t.toUpperCase(), company: c, sector: s, size_rank: r },
      })),
      theme: fc
        .record({
          slug: fc.string({ minLength: 1, maxLength: 10, unit: charOf('abcdefghijklmnopqrstuvwxyz0123456789-'.split('')) }).filter((s) => /^[a-z0-9]/.test(s)),
          name: words,
          d: words,
          st: tenths(100),
          cs: fc.array(fc.tuple(tickerText, fc.constantFrom(...THEME_RELATIONSHIPS)), { minLength: 1, maxLength: 4 }),
        })
        .map(({ slug, name, d, st, cs }) => ({
          kind: 'theme' as const,
          fields: { slug, name, description: d, strength: st, constituents: cs.map(([t, r]) => ({ ticker: t, relationship: r })) },
          csv: { slug, name, description: d, strength: String(st), constituents: cs.map(([t, r]) => `${t}:${r}`).join(';') },
          expected: { slug, name, description: d, strength: st, constituents: cs.map(([t, r]) => ({ ticker: t.toUpperCase(), relationship: r })) },
        })),
      signal: fc
        .record({ id: fc.integer({ min: 1, max: 1e9 }), a: fc.constantFrom(...SIGNAL_ALERT_TYPES), c: words, ts: fc.array(tickerText, { minLength: 1, maxLength: 3 }), th: fc.array(listItem, { minLength: 1, maxLength: 3 }), at: instant })
        .map(({ id, a, c, ts, th, at }) => ({
          kind: 'signal' as const,
          fields: { id, alert_type: a, content: c, tickers: ts, themes: th, created_at: at },
          csv: { id: String(id), alert_type: a, content: c, tickers: ts.join(';'), themes: th.join(';'), created_at: at },
          expected: { id, alert_type: a, content: c, tickers: ts.map((t) => t.toUpperCase()), themes: th, created_at: at },
        })),
    };
    const anyValid = fc.oneof(...INGEST_KINDS.map((k) => validRow[k]));
    const quote = (v: string) => `"${v.replace(/"/g, '""')}"`;

    it('gives back valid generated rows of every kind from JSONL, each with its line', () => {
      fc.assert(
        fc.property(fc.array(anyValid, { minLength: 1, maxLength: 12 }), (rows) => {
          const text = rows.map((r) => JSON.stringify({ type: r.kind, ...r.fields })).join('\n');
          const parsed = parseIngestFile(text, 'jsonl');
          expect(parsed.map((p) => ({ kind: p.kind, line: p.line, value: p.value }))).to.deep.equal(rows.map((r, i) => ({ kind: r.kind, line: i + 1, value: r.expected })));
        }),
      );
    });

    it('gives back valid generated rows from CSV, one kind per file recognised by its columns', () => {
      fc.assert(
        fc.property(fc.constantFrom<IngestKind>(...INGEST_KINDS).chain((k) => fc.array(validRow[k], { minLength: 1, maxLength: 8 })), (rows) => {
          const columns = Object.keys(rows[0]!.csv);
          const text = [columns.join(','), ...rows.map((r) => columns.map((c) => quote(r.csv[c]!)).join(','))].join('\n');
          const parsed = parseIngestFile(text, 'csv');
          expect(parsed.map((p) => ({ kind: p.kind, value: p.value }))).to.deep.equal(rows.map((r) => ({ kind: r.kind, value: r.expected })));
        }),
      );
    });
    it('reads an empty list cell of a CSV (no constituents, no tickers, no themes) as the empty list JSONL gives with []', () => {
      // ingest.schema.ts maps a blank list cell to [] (`s.trim() === '' ? []`), but the parser
      // drops every empty cell before validating (ingest.parser.ts, `v !== ''`), so that branch
      // never runs for CSV: the row is refused as missing a required field, while the same row in
      // JSONL is accepted.
      const theme = 'slug,name,description,strength,constituents\nai,AI,,50,\n';
      const signal = 'id,alert_type,content,tickers,themes,created_at\n7,demand_surge,Rates up,,,2024-01-02T00:00:00Z\n';
      const jsonl = [
        JSON.stringify({ type: 'theme', slug: 'ai', name: 'AI', strength: 50, constituents: [] }),
        JSON.stringify({ type: 'signal', id: 7, alert_type: 'demand_surge', content: 'Rates up', tickers: [], themes: [], created_at: '2024-01-02T00:00:00Z' }),
      ].join('\n');
      const fromJsonl = parseIngestFile(jsonl, 'jsonl').map((r) => r.value);
      const fromCsv: unknown[] = [];
      const refusals: string[] = [];
      for (const text of [theme, signal]) {
        try {
          fromCsv.push(...parseIngestFile(text, 'csv').map((r) => r.value));
        } catch (err) {
          refusals.push((err as Error).message.split('\n')[1]!.trim());
        }
      }
      expect(refusals, 'CSV rows with an empty list cell refused').to.deep.equal([]);
      expect(fromCsv).to.deep.equal(fromJsonl);
    });
  });

  // -----------------------------------------------------------------------------------------------
  // (c) The parameter parsers of every endpoint

  describe('(c) the parameter parsers (queries/shared, src/web/int-param.ts)', () => {
    const nasty = fc.constantFrom(
      '',
      ' ',
      '0',
      '-0',
      '+1',
      '1.5',
      '1e3',
      '0x10',
      '１２',
      '\u00a012\u00a0',
      '\ufeff7',
      '12\u2028',
      '99999999999999999999',
      '9007199254740993',
      '-9007199254740993',
      'null',
      'undefined',
      'NaN',
      'Infinity',
      '2019-06-14',
      '2019-02-29',
      '2020-02-29',
      '0000-01-01',
      '9999-12-31T23:59:59-00:01',
      '2019-06-14T25:00:00Z',
      '2019-06-14 12:00:00',
      '2019-06-14T12:00:00.1234567891+05:30',
      '2019-06-14T12:00:00 05:30',
      'bull',
      'BEAR',
      ' Bull ',
      'AAPL',
      'aapl,msft,,',
      'ﬁ',
      'ſ',
      'BRK.B',
      '%41',
      '\u0000',
      '\ud800',
      '🦄',
      'A'.repeat(13),
      Array.from({ length: 51 }, (_, i) => `T${i}`).join(','),
      Array.from({ length: 60 }, () => 'AAPL').join(','),
    );
    const charset = '0123456789+-.eE ,:;TZtz\u00a0\ufeffABCabc_%'.split('');
    const input = fc.oneof(nasty, fc.string({ maxLength: 30, unit: charOf(charset) }), utf16(30), fc.string({ minLength: 500, maxLength: 3000 }));
    const rule: Arbitrary<IntParamRule> = fc
      .record({ min: fc.integer({ min: -1000, max: 1000 }), span: fc.nat(100_000), aboveMax: fc.constantFrom<IntParamRule['aboveMax']>(undefined, 'limit_exceeded', 'bad_request') })
      .map(({ min, span, aboveMax }) => ({ min, max: min + span, default: min, ...(aboveMax ? { aboveMax } : {}) }));

    /** Runs a parser: its value, or its AppError (with a code from `codes`), never another exception. */
    function outcome<T>(parse: () => T, codes: readonly ErrorCode[], what: string): { value: T } | { error: AppError } {
      try {
        return { value: parse() };
      } catch (err) {
        const e = expectAppError(err, codes, what);
        // A refusal quotes at most a short piece of what was sent.
        expect(e.detail.length, `${what}: detail of ${e.detail.length} characters`).to.be.below(400);
        return { error: e };
      }
    }

    it('parseIntParam: an integer within [min, max], or 400 bad_request / 422 limit_exceeded naming the parameter', () => {
      fc.assert(
        fc.property(input, rule, (text, r) => {
          const o = outcome(() => parseIntParam('limit', text, r), ['bad_request', 'limit_exceeded'], `limit=${text.slice(0, 40)}`);
          if ('value' in o) {
            expect(Number.isInteger(o.value)).to.equal(true);
            expect(o.value).to.be.within(r.min, r.max);
            expect(text, 'an empty value is refused, not read as the default').to.not.equal('');
            expect(o.value).to.equal(Number(text.trim()));
          } else {
            expect(o.error.extensions['errors']).to.deep.equal([{ parameter: 'limit', message: (o.error.extensions['errors'] as { message: string }[])[0]!.message }]);
            if (o.error.code === 'limit_exceeded') {
              expect(r.aboveMax ?? 'limit_exceeded').to.equal('limit_exceeded');
              expect(o.error.extensions['maximum']).to.equal(r.max);
              expect(Number(text.trim())).to.be.greaterThan(r.max);
            }
          }
          // Stable: the same text gives the same answer.
          const again = outcome(() => parseIntParam('limit', text, r), ['bad_request', 'limit_exceeded'], 'again');
          expect('value' in again ? again.value : again.error.code).to.equal('value' in o ? o.value : o.error.code);
          const optional = outcome(() => parseOptionalIntParam('limit', text, r), ['bad_request', 'limit_exceeded'], 'optional');
          expect('value' in optional ? optional.value : optional.error.code).to.equal('value' in o ? o.value : o.error.code);
        }),
        { numRuns: 500 },
      );
    });

    it('parseDateParam: a real calendar date YYYY-MM-DD as sent, or 400 bad_request', () => {
      fc.assert(
        fc.property(fc.oneof(input, fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }).map((ms) => new Date(ms).toISOString().slice(0, 10))), (text) => {
          const o = outcome(() => parseDateParam('start', text), ['bad_request'], `start=${text.slice(0, 40)}`);
          if ('value' in o) {
            expect(o.value).to.equal(text);
            expect(o.value).to.match(/^\d{4}-\d{2}-\d{2}$/);
            expect(new Date(`${o.value!}T00:00:00Z`).toISOString().slice(0, 10)).to.equal(o.value);
          }
        }),
        { numRuns: 500 },
      );
    });

    it('parseInstantParam: a canonical ISO instant (years 0000-9999) that parses to itself, or 400 bad_request', () => {
      fc.assert(
        fc.property(input, fc.constantFrom<'up' | 'down'>('up', 'down'), (text, round) => {
          const o = outcome(() => parseInstantParam('since', text, round), ['bad_request'], `since=${text.slice(0, 40)}`);
          if (!('value' in o) || o.value === undefined) return;
          expect(o.value).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
          expect(parseInstantParam('since', o.value, round)).to.equal(o.value);
          const other = parseInstantParam('since', text, round === 'up' ? 'down' : 'up')!;
          expect(round === 'up' ? o.value >= other : o.value <= other).to.equal(true);
        }),
        { numRuns: 500 },
      );
    });

    it(`parseTickerList: 1 to ${MAX_TICKERS_PER_CALL} distinct upper-case symbols, or 400 bad_request`, () => {
      fc.assert(
        fc.property(fc.oneof(input, fc.array(fc.oneof(fc.string({ maxLength: 14, unit: charOf('AbC1.-é ,'.split('')) }), fc.constant('AAPL')), { maxLength: 70 }).map((xs) => xs.join(','))), (text) => {
          const o = outcome(() => parseTickerList(text), ['bad_request'], `tickers=${text.slice(0, 40)}`);
          if (!('value' in o)) return;
          const list = o.value!;
          expect(list.length).to.be.within(1, MAX_TICKERS_PER_CALL);
          expect(new Set(list).size).to.equal(list.length);
          for (const t of list) expect(t).to.match(/^[A-Z0-9.-]{1,12}$/);
        }),
        { numRuns: 500 },
      );
      expect(parseTickerList(undefined)).to.equal(null);
    });

    it('tickerFromPath and parseDirection: a value of their type, or their one refusal', () => {
      fc.assert(
        fc.property(input, (text) => {
          const t = outcome(() => tickerFromPath(text), ['not_found'], `ticker ${text.slice(0, 40)}`);
          if ('value' in t) expect(t.value).to.match(/^[A-Z0-9.-]{1,12}$/);
          const d = outcome(() => parseDirection(text), ['bad_request'], `direction=${text.slice(0, 40)}`);
          if ('value' in d) expect([null, 'bull', 'bear']).to.include(d.value);
        }),
        { numRuns: 500 },
      );
    });

    it('parseWebhookId: a positive safe integer, or 400 bad_request (its documented contract)', () => {
      // parseIntParam answers an empty value with the rule's default without checking it against
      // `min`; parseWebhookId's default is 0, so "" gives webhook id 0 instead of a 400. Over HTTP
      // the path segment is never empty (express needs one character), so this is latent.
      fc.assert(
        fc.property(input, (text) => {
          const w = outcome(() => parseWebhookId(text), ['bad_request'], `webhook_id ${text.slice(0, 40)}`);
          if ('value' in w) {
            expect(Number.isSafeInteger(w.value)).to.equal(true);
            expect(w.value, `webhook_id ${JSON.stringify(text)}`).to.be.at.least(1);
          }
        }),
        { numRuns: 500 },
      );
    });
  });

  // -----------------------------------------------------------------------------------------------
  // (d) The MCP tools' argument schemas

  describe('(d) the MCP tool argument schemas', () => {
    interface ContractLike {
      args: readonly string[];
      required: readonly string[];
    }
    type QueryOf = (tool: string, contract: ContractLike, args: Record<string, unknown>) => Record<string, string | undefined>;
    const tools: { name: string; contract: ContractLike }[] = [];
    let queryOf: QueryOf | null = null;

    before(async () => {
      // Imported here, not at the top: the MCP files are being changed, and a half-written one
      // should fail this group only. The contracts come from the document tsoa generated.
      const spec = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../src/app/http/generated/swagger.json'), 'utf8')) as Record<string, unknown>;
      const server = (await import(pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '../../src/app/mcp/server.ts')).href)) as {
        toolEntries: (spec: Record<string, unknown>) => ReadonlyMap<string, { contract: ContractLike }>;
      };
      for (const [name, { contract }] of server.toolEntries(spec)) tools.push({ name, contract });
      queryOf = ((await import('../../src/app/mcp/contract.js')) as unknown as { queryOf: QueryOf }).queryOf;
    });

    it('finds the tools of the rate card', () => {
      const expected = Object.values(RATE_CARD).flatMap((r) => (r.mcp_tool ? [r.mcp_tool] : []));
      expect(tools.map((t) => t.name).sort()).to.deep.equal([...new Set(expected)].sort());
    });

    it('accepts or refuses any JSON object as arguments (a bad_request naming the unknown or missing ones), never crashing, and hands the twin query strings', () => {
      const argNames = [...new Set(tools.flatMap((t) => t.contract.args))];
      const key = fc.oneof(fc.constantFrom(...argNames, '__proto__', 'constructor', 'toString'), fc.string({ maxLength: 6 }));
      fc.assert(
        fc.property(fc.constantFrom(...tools), fc.dictionary(key, jsonValue(3), { maxKeys: 6, noNullPrototype: true }), (tool, args) => {
          let query: Record<string, string | undefined>;
          try {
            query = queryOf!(tool.name, tool.contract, args);
          } catch (err) {
            expect(err, tool.name).to.be.instanceOf(Error);
            expect((err as AppError).code, tool.name).to.equal('bad_request');
            expect(Object.keys(args).some((k) => !tool.contract.args.includes(k)) || tool.contract.required.some((a) => args[a] === undefined), tool.name).to.equal(true);
            return;
          }
          expect(Object.keys(args).every((k) => tool.contract.args.includes(k)), tool.name).to.equal(true);
          expect(Object.keys(query).sort()).to.deep.equal([...tool.contract.args].sort());
          for (const [name, v] of Object.entries(query)) {
            expect(v === undefined || typeof v === 'string', `${tool.name}.${name}: ${typeof v}`).to.equal(true);
            expect(v === undefined, `${tool.name}.${name}`).to.equal(args[name] === undefined);
          }
          expect(Object.getPrototypeOf(query)).to.equal(Object.prototype);
        }),
        { numRuns: 300 },
      );
    });
  });
});
