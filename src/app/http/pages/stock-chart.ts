import type { HistoryRow } from '../../../../projections/score-history/score-history.projection.js';

/** The figures the stock page's chart draws, carried in the page as JSON (`#score-data`). */
export interface StockChartData {
  dates: string[];
  main_street: number[];
  wall_street: number[];
  service_score: number[];
  /** Per date, the instant the row was restated at, or null when never restated. */
  restated_at: (string | null)[];
}

export function stockChartData(rows: readonly HistoryRow[]): StockChartData {
  return {
    dates: rows.map((r) => r.date),
    main_street: rows.map((r) => r.main_street),
    wall_street: rows.map((r) => r.wall_street),
    service_score: rows.map((r) => r.service_score),
    restated_at: rows.map((r) => (r.version > 1 ? r.restated_at : null)),
  };
}

/**
 * The stock page's only script: uPlot (served from the package) over the page's JSON, with a
 * dated x-axis, a fixed 0-100 y-axis (so a quiet stock is not drawn as a swing), the three series
 * and a marker on every restated day. Without JavaScript the page keeps its SVG outline and the
 * history table.
 */
export const STOCK_CHART_JS = `(() => {
  const el = document.getElementById('score-chart');
  const source = document.getElementById('score-data');
  if (!el || !source || !window.uPlot) return;
  const data = JSON.parse(source.textContent);
  if (data.dates.length === 0) return;
  const xs = data.dates.map((d) => Date.parse(d + 'T00:00:00Z') / 1000);
  const restated = data.restated_at.map((at, i) => (at ? data.service_score[i] : null));
  const fmt = (v) => (v == null ? '—' : v.toFixed(1));
  const width = () => Math.max(280, Math.min(el.clientWidth || 720, 960));
  const opts = {
    width: width(),
    height: 300,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
    scales: { x: { time: true }, y: { range: [0, 100] } },
    series: [
      { label: 'Date', value: (u, ts) => (ts == null ? '—' : new Date(ts * 1000).toISOString().slice(0, 10)) },
      { label: 'Service score', stroke: '#0b5cad', width: 2.5, points: { show: false }, value: (u, v) => fmt(v) },
      { label: 'Main Street', stroke: '#b45309', width: 1.5, points: { show: false }, value: (u, v) => fmt(v) },
      { label: 'Wall Street', stroke: '#6d28d9', width: 1.5, dash: [6, 4], points: { show: false }, value: (u, v) => fmt(v) },
      { label: 'Restated', stroke: '#b42318', width: 0, paths: () => null, points: { show: true, size: 10, width: 2, stroke: '#b42318', fill: '#fff' }, value: (u, v) => (v == null ? '—' : 'yes') },
    ],
    // What was drawn, on the element (the browser tests read the scales back from here).
    hooks: { draw: [(u) => {
      const day = (ts) => new Date(ts * 1000).toISOString().slice(0, 10);
      el.setAttribute('data-y-range', u.scales.y.min + '-' + u.scales.y.max);
      el.setAttribute('data-x-range', day(u.scales.x.min) + '/' + day(u.scales.x.max));
      el.setAttribute('data-drawn', String(xs.length));
    }] },
    axes: [{ label: 'Date (UTC)' }, { label: 'Score (0-100)', values: (u, ticks) => ticks.map((t) => String(t)) }],
  };
  el.textContent = '';
  const plot = new window.uPlot(opts, [xs, data.service_score, data.main_street, data.wall_street, restated], el);
  window.addEventListener('resize', () => plot.setSize({ width: width(), height: 300 }));
})();
`;
