import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../core/paths.js';

/**
 * The service's version: package.json's, the one place it is written. The OpenAPI document's
 * `info.version` (tsoa reads package.json), the MCP server's `serverInfo.version`, /llms.txt and
 * CHANGELOG.md's newest release all say it (test/e2e/version.test.ts).
 */
export const SERVICE_VERSION: string = (JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string }).version;
