import { run as listThemes } from '../../../../queries/get-themes/get-themes.controller.js';
import { callTwin, describeTool, toolNameOf, twinTool } from '../rest-twin.js';

/** `list_themes`, the twin of GET /v1/themes. */
export const listThemesTool = twinTool({
  name: toolNameOf('themes'),
  title: 'Theme baskets',
  description: describeTool(
    'themes',
    'Every theme basket, strongest first: its slug (for get_theme), name, description, strength, tickers and the average scores of its constituents on your as-of date.',
  ),
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: (_args, ctx) => callTwin(ctx, 'themes', listThemes),
});
