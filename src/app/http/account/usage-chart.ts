/**
 * The account page's usage chart, the page's only script: uPlot (served from the package) draws
 * the credits charged per day from the JSON the page carries, over the whole month, with a dated
 * x-axis and a credits y-axis. The legend always shows figures: the day under the pointer, else
 * the month's total (uPlot's own resting legend reads `--`). Without JavaScript the same figures
 * stay readable in the table beside it.
 */
export const USAGE_CHART_JS = `(() => {
  const el = document.getElementById('usage-chart');
  const source = document.getElementById('usage-data');
  if (!el || !source || !window.uPlot) return;
  const data = JSON.parse(source.textContent);
  if (data.days.length === 0) return;
  const xs = data.days.map((d) => Date.parse(d + 'T00:00:00Z') / 1000);
  // The whole month on the axis, however few days had calls.
  const first = Date.parse(data.month + '-01T00:00:00Z') / 1000;
  const next = new Date(first * 1000);
  next.setUTCMonth(next.getUTCMonth() + 1);
  const last = next.getTime() / 1000 - 86400;
  const total = data.credits.reduce((n, c) => n + c, 0);
  const count = (n) => n.toLocaleString('en-US');
  const day = (ts) => new Date(ts * 1000).toLocaleDateString('en-GB', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
  const width = () => Math.max(260, Math.min(el.clientWidth || 720, 900));
  const opts = {
    width: width(),
    height: 240,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
    scales: { x: { time: true, range: [first - 43200, last + 43200] }, y: { range: (u, min, max) => [0, Math.max(10, Math.ceil(max * 1.1))] } },
    series: [
      { label: 'Date', value: (u, ts) => (ts == null ? data.month_name : day(ts)) },
      {
        label: 'Credits',
        stroke: '#0b5cad',
        fill: 'rgba(11,92,173,0.12)',
        width: 2,
        points: { show: true },
        value: (u, v, si, idx) => (idx == null ? count(total) + ' in all' : count(v ?? 0) + ' (' + count(data.calls[idx] ?? 0) + ' calls)'),
      },
    ],
    axes: [
      { label: 'Date (UTC)', values: (u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleDateString('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' })) },
      // Whole credits only: no 2.5 on the axis.
      { label: 'Credits per day', size: 60, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8], values: (u, ticks) => ticks.map((t) => count(t)) },
    ],
    // What was drawn, on the element (the axes are canvas text: the browser tests read them here).
    hooks: { draw: [(u) => {
      const iso = (ts) => new Date(ts * 1000).toISOString().slice(0, 10);
      el.setAttribute('data-axes', u.axes.map((a) => a.label).join('|'));
      el.setAttribute('data-x-range', iso(u.scales.x.min + 43200) + '/' + iso(u.scales.x.max - 43200));
      el.setAttribute('data-drawn', String(xs.length));
    }] },
  };
  el.textContent = '';
  const plot = new window.uPlot(opts, [xs, data.credits], el);
  window.addEventListener('resize', () => plot.setSize({ width: width(), height: 240 }));
})();
`;
