import { run as listThemes } from '../../../../queries/get-themes/get-themes.query.js';
import { twinTool } from '../rest-twin.js';

/** `list_themes`, the twin of GET /v1/themes. */
export const listThemesTool = twinTool({
  key: 'themes',
  title: 'Theme baskets',
  description:
    'Every theme basket, strongest first: its slug (for get_theme), name, description, strength, tickers and the average scores of its constituents on your as-of date.',
  run: (_args, call) => listThemes(call),
});
