import { z } from 'zod';
import { run as getThemeDetail } from '../../../../queries/get-themes/get-theme-detail.controller.js';
import { callTwin, describeTool, requiredRestArg, toolNameOf, twinTool } from '../rest-twin.js';

/** `get_theme`, the twin of GET /v1/themes/{slug}. */
export const getThemeTool = twinTool({
  name: toolNameOf('theme_detail'),
  title: 'One theme basket with its constituents',
  description: describeTool(
    'theme_detail',
    'One theme basket with each constituent you can see, its relationship to the theme and its scores on your as-of date.',
  ),
  inputSchema: {
    slug: requiredRestArg(z.string().describe('The theme\'s slug as list_themes gives it, e.g. "ai-infrastructure".')),
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
  run: ({ slug }, ctx) => callTwin(ctx, 'theme_detail', (call) => getThemeDetail(call, slug)),
});
