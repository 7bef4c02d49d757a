import { expect } from 'chai';
import type { NewEvent } from '../../src/core/event-store.port.js';
import { DemoDataset, demoAppendsBetween, type DemoAppend } from '../../commands/seed-demo/dataset/generate.js';
import { loadUsTickers } from '../../commands/seed-demo/dataset/us-tickers.js';
import { compositeScore } from '../../src/domain/composite.js';
import { addDays, isTradingDay, toDateString, tradingDaysBetween } from '../../src/domain/trading-calendar.js';
import type {
  ClosePricesRecorded,
  EarningsDatesScheduled,
  SignalPublished,
  ThemeDefined,
  TickerListed,
  WebVisitsRecorded,
} from '../../src/domain/scores/reference.events.js';
import type { ScoresPublished, ScoresRestated, ScoreValues } from '../../src/domain/scores/score.events.js';

const END_2020 = new Date('2020-12-31T23:59:59.999Z');
const DAY_MS = 86_400_000;

function eventsOf<E extends { type: string; data: unknown }>(appends: DemoAppend[], type: E['type']): { at: string; streamId: string; data: E['data'] }[] {
  return appends.flatMap((a) =>
    a.events.filter((e: NewEvent) => e.type === type).map((e) => ({ at: a.at, streamId: a.streamId, data: e.data })),
  );
}

describe('Demo dataset', function () {
  this.timeout(60_000);

  const dataset = new DemoDataset();
  let history: DemoAppend[];
  let published: { at: string; streamId: string; data: ScoresPublished['data'] }[];
  let restated: { at: string; streamId: string; data: ScoresRestated['data'] }[];
  before(() => {
    history = dataset.appendsBetween(null, END_2020);
    published = eventsOf<ScoresPublished>(history, 'ScoresPublished');
    restated = eventsOf<ScoresRestated>(history, 'ScoresRestated');
  });

  describe('When generated twice with the same options', () => {
    it('produces byte-identical appends, event ids included', () => {
      const to = new Date('2019-04-30T23:59:59Z');
      const a = JSON.stringify(new DemoDataset({ seed: 7 }).appendsBetween(null, to));
      const b = JSON.stringify(demoAppendsBetween(null, to, { seed: 7 }));
      expect(a).to.equal(b);
    });

    it('gives the same window whether the dataset simulated further first or not', () => {
      const window = [new Date('2020-06-01T00:00:00Z'), new Date('2020-06-10T00:00:00Z')] as const;
      const fresh = new DemoDataset().appendsBetween(...window);
      expect(JSON.stringify(dataset.appendsBetween(...window))).to.equal(JSON.stringify(fresh));
    });

    it('differs for another seed', () => {
      const to = new Date('2019-01-31T23:59:59Z');
      const a = eventsOf<ScoresPublished>(new DemoDataset({ seed: 1 }).appendsBetween(null, to), 'ScoresPublished');
      const b = eventsOf<ScoresPublished>(new DemoDataset({ seed: 2 }).appendsBetween(null, to), 'ScoresPublished');
      expect(JSON.stringify(a)).to.not.equal(JSON.stringify(b));
    });

    it('gives every event a unique UUID-shaped id', () => {
      const ids = history.flatMap((a) => a.events.map((e) => e.id));
      expect(new Set(ids).size).to.equal(ids.length);
      for (const id of ids) expect(id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });
  });

  describe('The universe', () => {
    it('lists at least 520 real tickers with unique, well-formed symbols, ranked by size', () => {
      const listed = eventsOf<TickerListed>(history, 'TickerListed').map((e) => e.data);
      expect(listed.length).to.be.at.least(520);
      expect(new Set(listed.map((t) => t.symbol)).size).to.equal(listed.length);
      for (const t of listed) {
        expect(t.symbol).to.match(/^[A-Z][A-Z.]{0,11}$/);
        expect(t.company).to.be.a('string').and.not.empty;
        expect(t.sector).to.be.oneOf([
          'Information Technology', 'Health Care', 'Financials', 'Consumer Discretionary', 'Consumer Staples',
          'Communication Services', 'Industrials', 'Energy', 'Utilities', 'Real Estate', 'Materials',
        ]);
      }
      expect(listed.map((t) => t.size_rank)).to.deep.equal(listed.map((_, i) => i + 1));
      const top10 = listed.slice(0, 10).map((t) => t.symbol);
      expect(top10).to.include.members(['AAPL', 'MSFT', 'NVDA', 'AMZN', 'GOOGL']);
      expect(listed.slice(0, 100).map((t) => t.symbol)).to.include.members(['JPM', 'LLY', 'XOM', 'COST', 'NFLX']);
    });

    it('is published at 00:00Z the day before the first trading day, before anything else', () => {
      expect(history[0]!.streamId).to.equal('tickers');
      expect(history[0]!.at).to.equal('2019-01-01T00:00:00.000Z');
      expect(loadUsTickers().length).to.equal(history[0]!.events.length);
    });

    it('defines 12 to 16 themes of 6 to 20 real constituents with relationships', () => {
      const symbols = new Set(loadUsTickers().map((t) => t.symbol));
      const themes = eventsOf<ThemeDefined>(history, 'ThemeDefined');
      expect(themes.length).to.be.within(12, 16);
      for (const { streamId, data } of themes) {
        expect(streamId).to.equal(`theme-${data.slug}`);
        expect(data.constituents.length).to.be.within(6, 20);
        expect(data.strength).to.be.within(0, 100);
        expect(data.name).to.not.be.empty;
        expect(data.description).to.not.be.empty;
        for (const c of data.constituents) {
          expect(symbols.has(c.ticker), c.ticker).to.equal(true);
          expect(c.relationship).to.be.oneOf(['core', 'supplier', 'beneficiary', 'adjacent', 'headwind']);
        }
      }
    });
  });

  describe('Daily publications', () => {
    it('cover every NYSE trading day and no weekend or holiday', () => {
      const expected = tradingDaysBetween('2019-01-02', '2020-12-31');
      expect(published.map((e) => e.data.date)).to.deep.equal(expected);
      const prices = eventsOf<ClosePricesRecorded>(history, 'ClosePricesRecorded').map((e) => e.data.date);
      const visits = eventsOf<WebVisitsRecorded>(history, 'WebVisitsRecorded').map((e) => e.data.date);
      expect(prices).to.deep.equal(expected);
      expect(visits).to.deep.equal(expected);
      for (const d of expected) expect(isTradingDay(d)).to.equal(true);
    });

    it('are stamped with their own publication times: prices 21:00, visits 21:30, scores 22:00 UTC', () => {
      for (const a of history) {
        const type = a.events[0]!.type;
        const date = (a.events[0]!.data as { date?: string }).date;
        if (type === 'ClosePricesRecorded') expect(a.at).to.equal(`${date}T21:00:00.000Z`);
        if (type === 'WebVisitsRecorded') expect(a.at).to.equal(`${date}T21:30:00.000Z`);
        if (type === 'ScoresPublished') {
          expect(a.at).to.equal(`${date}T22:00:00.000Z`);
          expect((a.events[0]!.data as ScoresPublished['data']).published_at).to.equal(a.at);
          expect(a.streamId).to.equal(`scores-${date}`);
        }
      }
    });

    it('come in chronological order', () => {
      for (let i = 1; i < history.length; i++) expect(history[i]!.at >= history[i - 1]!.at, history[i]!.at).to.equal(true);
    });

    it('score every ticker every day with values in 0..100 (one decimal) and the service composite', () => {
      const n = loadUsTickers().length;
      const bad: string[] = [];
      for (const { data } of published) {
        if (data.rows.length !== n) bad.push(`${data.date}: ${data.rows.length} rows`);
        for (const r of data.rows) {
          for (const v of [r.main_street, r.wall_street, r.service_score]) {
            if (!(v >= 0 && v <= 100) || Math.round(v * 10) / 10 !== v) bad.push(`${data.date} ${r.ticker}: ${v}`);
          }
          if (r.service_score !== compositeScore(r.main_street, r.wall_street)) bad.push(`${data.date} ${r.ticker}: composite`);
        }
      }
      expect(bad).to.deep.equal([]);
    });

    it('mark some early rows of about 30% of tickers as estimated, and none after the first year', () => {
      const estimatedTickers = new Set<string>();
      for (const { data } of published) {
        for (const r of data.rows) {
          if (!r.estimated) continue;
          estimatedTickers.add(r.ticker);
          expect(data.date < '2020-01-01').to.equal(true);
        }
      }
      const share = estimatedTickers.size / loadUsTickers().length;
      expect(share).to.be.within(0.2, 0.4);
      const top100 = new Set(loadUsTickers().slice(0, 100).map((t) => t.symbol));
      for (const t of estimatedTickers) expect(top100.has(t), t).to.equal(false);
    });

    it('let divergences grow beyond 25 points and close again', () => {
      const wide = new Map<string, string>();
      let closedAfterwards = 0;
      for (const { data } of published) {
        for (const r of data.rows) {
          const gap = Math.abs(r.main_street - r.wall_street);
          if (gap > 25 && !wide.has(r.ticker)) wide.set(r.ticker, data.date);
          else if (gap < 5 && wide.has(r.ticker)) {
            closedAfterwards++;
            wide.delete(r.ticker);
          }
        }
      }
      expect(closedAfterwards).to.be.greaterThan(10);
    });

    it('record positive closes with cents and integer web visits that scale with company size', () => {
      const bad: string[] = [];
      for (const { data } of eventsOf<ClosePricesRecorded>(history, 'ClosePricesRecorded')) {
        for (const c of data.closes) {
          if (!(c.close > 0) || Math.round(c.close * 100) / 100 !== c.close) bad.push(`${data.date} ${c.ticker}: ${c.close}`);
        }
      }
      let big = 0;
      let small = 0;
      for (const { data } of eventsOf<WebVisitsRecorded>(history, 'WebVisitsRecorded')) {
        data.visits.forEach((v, i) => {
          if (!Number.isInteger(v.visits) || v.visits <= 0) bad.push(`${data.date} ${v.ticker}: ${v.visits}`);
          if (i < 50) big += v.visits;
          if (i >= data.visits.length - 50) small += v.visits;
        });
      }
      expect(bad).to.deep.equal([]);
      expect(big).to.be.greaterThan(10 * small);
    });
  });

  describe('Restatements', () => {
    it('touch about 1% of rows', () => {
      const rows = published.reduce((n, e) => n + e.data.rows.length, 0);
      const restatedRows = restated.reduce((n, e) => n + e.data.rows.length, 0);
      expect(restatedRows / rows).to.be.within(0.006, 0.014);
    });

    it('come 1 to 5 days after first publication, on the same date stream, with nudged values', () => {
      const original = new Map<string, ScoreValues>();
      for (const { data } of published) for (const r of data.rows) original.set(`${data.date}/${r.ticker}`, r);
      for (const { at, streamId, data } of restated) {
        expect(streamId).to.equal(`scores-${data.date}`);
        expect(data.restated_at).to.equal(at);
        const delay = (Date.parse(at) - Date.parse(`${data.date}T22:00:00Z`)) / DAY_MS;
        expect(delay).to.be.within(1, 5);
        for (const r of data.rows) {
          const before = original.get(`${data.date}/${r.ticker}`)!;
          expect(before, `${data.date}/${r.ticker}`).to.exist;
          expect(r.main_street !== before.main_street || r.wall_street !== before.wall_street).to.equal(true);
          expect(Math.abs(r.main_street - before.main_street)).to.be.at.most(4.1);
          expect(r.service_score).to.equal(compositeScore(r.main_street, r.wall_street));
          expect(r.estimated).to.equal(before.estimated);
        }
      }
    });

    it('group the rows of one date restated at one instant into a single event', () => {
      const keys = restated.map((e) => `${e.data.date}@${e.data.restated_at}`);
      expect(new Set(keys).size).to.equal(keys.length);
      for (const { data } of restated) expect(new Set(data.rows.map((r) => r.ticker)).size).to.equal(data.rows.length);
    });
  });

  describe('Windows', () => {
    it('split anywhere give back exactly the single big window', () => {
      const cut = new Date('2020-03-10T21:45:00Z');
      const left = dataset.appendsBetween(null, cut);
      const right = dataset.appendsBetween(cut, END_2020);
      expect(JSON.stringify([...left, ...right])).to.equal(JSON.stringify(history));
    });

    it('leave out anything timed after the window end, even later on the same day', () => {
      const to = new Date('2020-03-10T21:59:59.999Z');
      const window = dataset.appendsBetween(new Date('2020-03-10T00:00:00Z'), to);
      expect(window.map((a) => a.streamId)).to.include.members(['prices-2020-03-10', 'visits-2020-03-10']);
      expect(window.map((a) => a.streamId)).to.not.include('scores-2020-03-10');
      for (const a of window) expect(a.at <= to.toISOString()).to.equal(true);
    });

    it('are empty before the dataset begins', () => {
      expect(dataset.appendsBetween(null, new Date('2018-12-31T23:59:59Z'))).to.deep.equal([]);
    });
  });

  describe('Earnings calendar', () => {
    /** What a reader of the log knows at `now`: the latest scheduled date per ticker. */
    const schedule = (now: Date) => {
      const latest = new Map<string, string>();
      for (const { at, data } of eventsOf<EarningsDatesScheduled>(history, 'EarningsDatesScheduled')) {
        if (at > now.toISOString()) break;
        for (const r of data.rows) latest.set(r.ticker, r.date);
      }
      return latest;
    };

    it('is published at 00:00Z on the first of each month on the earnings stream', () => {
      const earnings = history.filter((a) => a.streamId === 'earnings');
      expect(earnings.map((a) => a.at.slice(0, 10))).to.deep.equal(
        Array.from({ length: 24 }, (_, k) => toDateString(new Date(Date.UTC(2019, k, 1)))),
      );
      for (const a of earnings) expect(a.at.endsWith('T00:00:00.000Z')).to.equal(true);
    });

    it('announces each report date weeks ahead, on a trading day', () => {
      const monthly = eventsOf<EarningsDatesScheduled>(history, 'EarningsDatesScheduled').slice(1);
      let rows = 0;
      for (const { at, data } of monthly) {
        for (const r of data.rows) {
          rows++;
          expect(isTradingDay(r.date), r.date).to.equal(true);
          expect((Date.parse(r.date) - Date.parse(at)) / DAY_MS, `${r.ticker} ${r.date}`).to.be.within(30, 75);
        }
      }
      expect(rows).to.be.greaterThan(7 * loadUsTickers().length);
    });

    it('always has reporters within the next 14 days, and no ticker without a date for long', () => {
      const n = loadUsTickers().length;
      for (let t = Date.parse('2019-01-02T12:00:00Z'); t < Date.parse('2020-12-31T00:00:00Z'); t += 1.5 * DAY_MS) {
        const now = new Date(t);
        const today = toDateString(now);
        const latest = schedule(now);
        expect(latest.size).to.equal(n);
        const soon = [...latest.values()].filter((d) => d > today && d <= addDays(today, 14));
        expect(soon.length, today).to.be.greaterThan(0);
        // A ticker whose last known date has passed reported lately; its next date comes with one of
        // the next two monthly schedules (once it is at most 75 days away).
        for (const [ticker, d] of latest) if (d <= today) expect(d > addDays(today, -63), `${ticker} ${d} @ ${today}`).to.equal(true);
      }
    });
  });

  describe('Research signals', () => {
    it('are published 2 to 5 times a week with ids counting up from 1', () => {
      const signals = eventsOf<SignalPublished>(history, 'SignalPublished');
      expect(signals.map((s) => s.data.id)).to.deep.equal(signals.map((_, i) => i + 1));
      const perWeek = new Map<string, number>();
      for (const s of signals) {
        const d = s.at.slice(0, 10);
        const monday = addDays(d, 1 - new Date(`${d}T00:00:00Z`).getUTCDay());
        perWeek.set(monday, (perWeek.get(monday) ?? 0) + 1);
      }
      for (const [week, count] of perWeek) expect(count, week).to.be.within(2, 5);
      expect(perWeek.size).to.be.greaterThan(100);
    });

    it('name real tickers and themes, carry their own time, and quote the numbers', () => {
      const symbols = new Set(loadUsTickers().map((t) => t.symbol));
      const slugs = new Set(eventsOf<ThemeDefined>(history, 'ThemeDefined').map((t) => t.data.slug));
      const types = new Set<string>();
      for (const { at, streamId, data } of eventsOf<SignalPublished>(history, 'SignalPublished')) {
        expect(streamId).to.equal('signals');
        expect(data.created_at).to.equal(at);
        expect(isTradingDay(at.slice(0, 10))).to.equal(true);
        expect(data.tickers.length).to.be.greaterThan(0);
        for (const t of data.tickers) {
          expect(symbols.has(t), t).to.equal(true);
          expect(data.content).to.include(t);
        }
        for (const s of data.themes) expect(slugs.has(s), s).to.equal(true);
        expect(data.content).to.match(/\d+\.\d/);
        types.add(data.alert_type);
      }
      expect([...types].sort()).to.deep.equal(
        ['demand_surge', 'divergence_alert', 'earnings_watch', 'sentiment_shift', 'theme_rotation'],
      );
    });
  });

  describe('Prices over the full history (2019-01-02 to 2026-11-22)', () => {
    const tickers = loadUsTickers();
    const closes = new Map<string, number[]>(tickers.map((t) => [t.symbol, []]));
    const gaps = new Map<string, number[]>(tickers.map((t) => [t.symbol, []]));
    before(() => {
      for (const a of new DemoDataset().iterateAppends(null, new Date('2026-11-22T23:59:59Z'))) {
        for (const e of a.events) {
          if (e.type === 'ClosePricesRecorded') for (const c of (e.data as ClosePricesRecorded['data']).closes) closes.get(c.ticker)!.push(c.close);
          if (e.type === 'ScoresPublished') for (const r of (e.data as ScoresPublished['data']).rows) gaps.get(r.ticker)!.push(r.main_street - r.wall_street);
        }
      }
    });
    const logReturns = (c: number[]) => c.slice(1).map((x, k) => Math.log(x / c[k]!));
    const sd = (xs: number[]) => {
      const m = xs.reduce((a, b) => a + b, 0) / xs.length;
      return Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1));
    };
    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
    };

    it('keep every close between 1 and 2,000, starting from a plausible level for the stock', () => {
      const bad: string[] = [];
      for (const [ticker, c] of closes) {
        expect(c.length, ticker).to.equal(tradingDaysBetween('2019-01-02', '2026-11-22').length);
        const lo = Math.min(...c);
        const hi = Math.max(...c);
        if (lo < 1 || hi > 2000) bad.push(`${ticker}: ${lo} to ${hi}`);
        if (c[0]! < 10 || c[0]! > 400) bad.push(`${ticker} starts at ${c[0]}`);
        if (hi / c[0]! > 10 || c[0]! / lo > 10) bad.push(`${ticker}: ${c[0]} to between ${lo} and ${hi}`);
      }
      expect(bad).to.deep.equal([]);
      // The largest companies trade higher than the smallest, as listed shares tend to.
      const firsts = tickers.map((t) => closes.get(t.symbol)![0]!);
      expect(median(firsts.slice(0, 100))).to.be.above(1.3 * median(firsts.slice(-100)));
    });

    it('move with a realistic daily volatility: a median daily move under 3%, quieter in utilities than in technology', () => {
      const bad: string[] = [];
      const vol = new Map<string, number>();
      for (const [ticker, c] of closes) {
        const r = logReturns(c);
        const s = sd(r);
        vol.set(ticker, s);
        const typical = median(c.slice(1).map((x, k) => Math.abs(x / c[k]! - 1)));
        if (s < 0.008 || s > 0.035) bad.push(`${ticker}: daily sd ${s.toFixed(4)}`);
        if (typical >= 0.03) bad.push(`${ticker}: median daily move ${typical.toFixed(4)}`);
      }
      expect(bad).to.deep.equal([]);
      const sectorVol = (sector: string) => median(tickers.filter((t) => t.sector === sector).map((t) => vol.get(t.symbol)!));
      expect(sectorVol('Utilities')).to.be.below(0.8 * sectorVol('Information Technology'));
    });

    it('still lean with the gap: 20-day returns after a bull gap beat those after a bear gap', () => {
      const after = { bull: [] as number[], bear: [] as number[] };
      for (const [ticker, c] of closes) {
        const g = gaps.get(ticker)!;
        for (let k = 0; k + 20 < c.length; k += 5) {
          if (g[k]! > 20) after.bull.push(Math.log(c[k + 20]! / c[k]!));
          else if (g[k]! < -20) after.bear.push(Math.log(c[k + 20]! / c[k]!));
        }
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      expect(after.bull.length).to.be.above(1000);
      expect(after.bear.length).to.be.above(1000);
      expect(mean(after.bull) - mean(after.bear)).to.be.above(0.005);
    });
  });

  describe('The full history', () => {
    // How long it takes is a benchmark figure (npm run bench, seed), not a test's.
    it('from 2019-01-02 to 2026-11-22 has over a million score rows', () => {
      const all = new DemoDataset().appendsBetween(null, new Date('2026-11-22T23:59:59Z'));
      const rows = eventsOf<ScoresPublished>(all, 'ScoresPublished').reduce((n, e) => n + e.data.rows.length, 0);
      expect(rows).to.be.greaterThan(1_000_000);
    });
  });
});
