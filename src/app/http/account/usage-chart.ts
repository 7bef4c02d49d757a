/**
 * The account page's usage chart, the page's only script: uPlot (served from the package) draws
 * the credits charged per day from the JSON the page carries. Without JavaScript the same figures
 * stay readable in the table beside it.
 */
export const USAGE_CHART_JS = `(() => {
  const data = JSON.parse(document.getElementById('usage-data').textContent);
  const el = document.getElementById('usage-chart');
  if (!el || !window.uPlot || data.days.length === 0) return;
  const xs = data.days.map((d) => Date.parse(d + 'T00:00:00Z') / 1000);
  // The whole month on the axis, however few days had calls.
  const first = Date.parse(data.month + '-01T00:00:00Z') / 1000;
  const next = new Date(first * 1000);
  next.setUTCMonth(next.getUTCMonth() + 1);
  const last = next.getTime() / 1000 - 86400;
  const opts = {
    width: Math.min(el.clientWidth || 720, 900),
    height: 240,
    scales: { x: { time: true, range: [first, last] } },
    series: [{}, { label: 'Credits', stroke: '#0b5cad', fill: 'rgba(11,92,173,0.12)', width: 2, points: { show: true } }],
    axes: [{}, { label: 'credits' }],
  };
  new window.uPlot(opts, [xs, data.credits], el);
  el.setAttribute('data-drawn', String(data.days.length));
})();
`;
