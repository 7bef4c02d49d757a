/**
 * The REST controllers, in the order their routes are registered: tsoa reads this file
 * (tsoa.json's controllerPathGlobs) and registers the controllers in the TypeScript program's file
 * order, which is the order of these imports. Express tries routes in registration order, so a
 * literal path comes before a parameter that would capture it: GET /v1/scores/history before
 * GET /v1/scores/{ticker} (test/e2e/history.test.ts checks it). A new controller is added here
 * (test/unit/controllers.test.ts fails for one that is not).
 */
import '../../../queries/get-webhooks/get-webhooks.controller.js';
import '../../../queries/get-usage-ledger/get-usage-ledger.controller.js';
import '../../../queries/get-request-log/get-request-log.controller.js';
import '../../../queries/get-usage/get-usage.controller.js';
import '../../../queries/get-track-record/get-track-record.controller.js';
import '../../../queries/get-themes/get-themes.controller.js';
import '../../../queries/get-themes/get-theme-detail.controller.js';
import '../../../queries/get-social-heat/get-social-heat.controller.js';
import '../../../queries/get-signals/get-signals.controller.js';
import '../../../queries/get-screener/get-screener.controller.js';
import '../../../queries/get-score-history/get-score-history.controller.js';
import '../../../queries/get-multi-ticker-history/get-multi-ticker-history.controller.js';
import '../../../queries/get-score/get-score.controller.js';
import '../../../queries/get-meta/get-meta.controller.js';
import '../../../queries/get-earnings/get-earnings.controller.js';
import '../../../queries/get-divergence-open/get-divergence-open.controller.js';
import '../../../queries/get-divergence-events/get-divergence-events.controller.js';
import '../../../queries/get-divergence/get-divergence.controller.js';
import '../../../queries/get-coverage/get-coverage.controller.js';
import '../../../queries/get-bulk-exports/get-bulk-exports.controller.js';
import '../../../commands/manage-webhooks/webhooks.controller.js';
import '../../../commands/export-bundles/bulk-download.controller.js';
import '../../../queries/get-key-usage/get-keys.controller.js';
import '../../../commands/manage-keys/keys.controller.js';
