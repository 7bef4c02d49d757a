/**
 * `GET /account/usage/export?month=YYYY-MM&file=days|ledger`: the account's usage of a month for
 * its books, as CSV (RFC 4180, a header row, UTF-8): the calls and credits of each UTC day, or
 * every line of its credit ledger in that month, oldest first. Read by the same queries as the
 * account page's usage chart (`getUsageDays`) and `GET /v1/usage/ledger?month=` (`getUsageLedger`),
 * once the ledger read model holds the account's last charge: each file says what the ledger says.
 */
import { stringify } from 'csv-stringify/sync';
import { getUsageDays } from '../../../../queries/get-usage-days/get-usage-days.query.js';
import { MONTH, USAGE_LEDGER_MAX_LIMIT, getUsageLedger } from '../../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import type { LedgerEntryResponse } from '../../../../queries/shared/ledger-lines.js';
import { AppError } from '../../../core/errors.js';
import type { AccountRequest } from './account-route.js';

/** The ledger file's columns: every field of a `/v1/usage/ledger` entry but its raw `data`. */
export const LEDGER_CSV_COLUMNS = ['seq', 'at', 'period', 'kind', 'request_id', 'endpoint', 'channel', 'cost', 'from_allowance', 'from_prepaid', 'from_overage', 'credits', 'detail', 'hash', 'prev_hash'] as const;
export const DAYS_CSV_COLUMNS = ['day', 'calls', 'credits'] as const;

/** Every ledger line of the month, oldest first (the API pages them newest first). */
async function monthLines(r: AccountRequest, month: string): Promise<LedgerEntryResponse[]> {
  const lines: LedgerEntryResponse[] = [];
  let cursor: string | null = null;
  do {
    const page = await getUsageLedger(r.services.reads, r.services.events, { accountId: r.who.account_id, month, limit: USAGE_LEDGER_MAX_LIMIT, cursor });
    lines.push(...page.entries);
    cursor = page.next_cursor;
  } while (cursor !== null);
  return lines.reverse();
}

async function csvOf(r: AccountRequest, month: string, file: 'days' | 'ledger'): Promise<string> {
  if (file === 'days') {
    const days = await getUsageDays(r.services.reads, r.who.account_id, month);
    return stringify([[...DAYS_CSV_COLUMNS], ...days.map((d) => [d.day, d.calls, d.credits])]);
  }
  const lines = await monthLines(r, month);
  return stringify([[...LEDGER_CSV_COLUMNS], ...lines.map((l) => LEDGER_CSV_COLUMNS.map((c) => l[c] ?? ''))]);
}

export async function sendUsageCsv(r: AccountRequest): Promise<void> {
  const month = typeof r.req.query['month'] === 'string' ? r.req.query['month'] : '';
  const file = r.req.query['file'];
  if (!MONTH.test(month)) throw new AppError('bad_request', 'Choose a month (YYYY-MM)');
  if (file !== 'days' && file !== 'ledger') throw new AppError('bad_request', 'Choose the daily usage or the ledger lines');
  await r.services.queries.ledgerCaughtUp(r.who.account_id);
  const csv = await csvOf(r, month, file);
  r.res.setHeader('Content-Type', 'text/csv; charset=utf-8');
  r.res.setHeader('Content-Disposition', `attachment; filename="scores-${file === 'days' ? 'usage-days' : 'ledger'}-${month}.csv"`);
  r.res.send(csv);
}
