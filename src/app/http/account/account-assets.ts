import type { Express } from 'express';
import { join } from 'node:path';
import { projectRoot } from '../../../core/paths.js';
import { USAGE_CHART_JS } from './usage-chart.js';

/**
 * Copy buttons (`data-copy` names the element whose text they copy): shown only where the script
 * runs and the clipboard is there; without them the key is still there to select.
 */
const COPY_JS = `for (const b of document.querySelectorAll('button[data-copy]')) {
  const from = document.getElementById(b.dataset.copy);
  if (!from || !navigator.clipboard) continue;
  b.hidden = false;
  b.addEventListener('click', () => navigator.clipboard.writeText(from.textContent.trim()).then(() => { b.textContent = 'Copied'; }, () => { b.textContent = 'Copy failed: select the key'; }));
}
`;

/** uPlot from the package itself, and the chart script: nothing from a CDN. */
export function registerAccountAssets(app: Express): void {
  const uplot = join(projectRoot(), 'node_modules/uplot/dist');
  app.get('/account/assets/uPlot.iife.min.js', (_req, res) => res.sendFile(join(uplot, 'uPlot.iife.min.js'), { maxAge: '1d' }));
  app.get('/account/assets/uPlot.min.css', (_req, res) => res.sendFile(join(uplot, 'uPlot.min.css'), { maxAge: '1d' }));
  app.get('/account/assets/copy.js', (_req, res) => {
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.send(COPY_JS);
  });
  app.get('/account/assets/usage-chart.js', (_req, res) => {
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.send(USAGE_CHART_JS);
  });
}
