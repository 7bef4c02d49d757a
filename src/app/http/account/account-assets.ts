import type { Express } from 'express';
import { join } from 'node:path';
import { projectRoot } from '../../../core/paths.js';
import { USAGE_CHART_JS } from './usage-chart.js';

/** uPlot from the package itself, and the chart script: nothing from a CDN. */
export function registerAccountAssets(app: Express): void {
  const uplot = join(projectRoot(), 'node_modules/uplot/dist');
  app.get('/account/assets/uPlot.iife.min.js', (_req, res) => res.sendFile(join(uplot, 'uPlot.iife.min.js'), { maxAge: '1d' }));
  app.get('/account/assets/uPlot.min.css', (_req, res) => res.sendFile(join(uplot, 'uPlot.min.css'), { maxAge: '1d' }));
  app.get('/account/assets/usage-chart.js', (_req, res) => {
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.send(USAGE_CHART_JS);
  });
}
