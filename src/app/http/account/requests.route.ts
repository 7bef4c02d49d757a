/**
 * `GET /account/requests`: the account's request log, filtered as the query string asks (the
 * filters of GET /v1/requests); `GET /account/requests/:id`: one call (another account's is 404).
 */
import type { Request } from 'express';
import { accountKeys, readRequestLog, REQUEST_ID, requestLogQuery, type RequestLogFilters } from '../../../../queries/get-request-log/get-request-log.query.js';
import { notFound } from '../../../core/errors.js';
import { REQUEST_LOG_RETENTION_DAYS } from '../../../core/request-log.js';
import type { AccountRequest } from './account-route.js';
import { sendAccountPage } from './account-web.js';
import { requestPage, requestsPage } from './requests.page.js';

/** The page's filters: a field left empty in the form is no filter. */
function filtersOf(query: Request['query']): RequestLogFilters {
  const pick = (name: keyof RequestLogFilters) => {
    const v = query[name];
    return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
  };
  return { request_id: pick('request_id'), key: pick('key'), status: pick('status'), operation: pick('operation'), day: pick('day'), cursor: pick('cursor') };
}

export async function showRequests({ req, res, who, services }: AccountRequest): Promise<void> {
  const filters = filtersOf(req.query);
  const keys = await accountKeys(services.events, who.account_id);
  const page = await readRequestLog(services.requestLog, keys, requestLogQuery(who.account_id, filters, keys));
  sendAccountPage(res, 200, 'Request log', requestsPage(page, keys, filters));
}

export async function showRequest({ req, res, who, services }: AccountRequest): Promise<void> {
  const id = String(req.params['id']);
  const keys = await accountKeys(services.events, who.account_id);
  const page = REQUEST_ID.test(id) ? await readRequestLog(services.requestLog, keys, requestLogQuery(who.account_id, { request_id: id, limit: '1' }, keys)) : null;
  const entry = page?.requests[0];
  if (!entry) throw notFound(`No call ${id} in this account's request log (calls are kept ${REQUEST_LOG_RETENTION_DAYS} days)`);
  sendAccountPage(res, 200, `Call ${entry.request_id}`, requestPage(entry));
}
