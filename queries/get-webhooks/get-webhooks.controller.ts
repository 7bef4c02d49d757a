import { Example, Get, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { AuthedRequest } from '../../src/web/meter.port.js';
import { MeteredController } from '../shared/metered-controller.js';
import type { ProblemDetails } from '../../src/web/problem.js';
import { type WebhookDeliveriesResponse, type WebhooksResponse, runList, runDeliveries } from './get-webhooks.query.js';

/** The read side of `/v1/webhooks` (registration, deletion and tests are `commands/manage-webhooks`). */
@Route('v1/webhooks')
@Tags('Webhooks')
@Security('api_key', ['webhooks'])
export class GetWebhooksController extends MeteredController {
  /**
   * Your webhooks (deleted ones are not listed), with whether each is active, its failure run and
   * its last attempt. The secret is shown only at registration. Free.
   * @summary Your webhooks
   */
  @Get()
  @Example<WebhooksResponse>({
    webhooks: [
      {
        id: 7,
        event_type: 'score_move',
        url: 'https://hooks.example.com/scores',
        is_active: true,
        consecutive_failures: 0,
        last_fired_at: '2019-06-14 12:00:00',
      },
    ],
  })
  @Response<ProblemDetails>(400, 'A query parameter (this endpoint takes none)')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  public async listWebhooks(@Request() req: AuthedRequest): Promise<WebhooksResponse> {
    return this.serve(req, (call) => runList(call));
  }

  /**
   * The latest 50 delivery attempts of one of your webhooks, newest first: live and test, each
   * with its message id (to resend it by) and attempt number, and its outcome (never the
   * receiver's answer). Free.
   * @summary A webhook's latest deliveries
   * @param webhook_id The webhook's `id`.
   * @example webhook_id 7
   */
  @Get('{webhook_id}/deliveries')
  @Example<WebhookDeliveriesResponse>({
    deliveries: [{ message_id: 'msg_5wJX0T3Qk2m8d9Yv1r4Z7A', attempt: 1, kind: 'test', event_type: 'score_move', event_count: 1, ok: true, status_code: 204, error: null, created_at: '2019-06-14 12:00:00' }],
    count: 1,
  })
  @Response<ProblemDetails>(400, 'webhook_id not a positive integer, or a query parameter (this endpoint takes none)')
  @Response<ProblemDetails>(401, 'Missing or unknown API key')
  @Response<ProblemDetails>(403, 'Revoked key (key_forbidden) or plan below quant (tier)')
  @Response<ProblemDetails>(404, 'No webhook of yours with that id: unknown, deleted or another account\'s (not_found)')
  public async listWebhookDeliveries(@Request() req: AuthedRequest, @Path() webhook_id: string): Promise<WebhookDeliveriesResponse> {
    return this.serve(req, (call) => runDeliveries(call, webhook_id));
  }
}
