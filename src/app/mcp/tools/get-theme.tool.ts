import { run as getThemeDetail } from '../../../../queries/get-themes/get-theme-detail.query.js';
import { twinTool } from '../rest-twin.js';

/** `get_theme`, the twin of GET /v1/themes/{slug}. */
export const getThemeTool = twinTool({
  key: 'theme_detail',
  title: 'One theme basket with its constituents',
  description:
    'One theme basket with each constituent you can see, its relationship to the theme and its scores on your as-of date.',
  run: ({ slug }, call) => getThemeDetail(call, slug!),
});
