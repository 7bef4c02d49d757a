/** `GET /account/invoices/<number>.pdf|.json`: one of the account's own invoices (another account's is 404). */
import { getInvoice } from '../../../../queries/get-invoices/get-invoices.query.js';
import { renderInvoicePdf } from '../../../../queries/get-invoices/invoice-pdf.js';
import { notFound } from '../../../core/errors.js';
import { SERVICE_NAME } from '../pages/html.js';
import type { AccountRequest } from './account-route.js';

export async function sendInvoice({ req, res, who, services }: AccountRequest): Promise<void> {
  const file = /^(.+)\.(pdf|json)$/.exec(String(req.params['file']));
  if (!file) throw notFound('No such invoice on this account');
  const doc = await getInvoice(services.reads, who.account_id, file[1]!);
  // The address is kept sealed under the account's key; shown opened to its owner only.
  const invoice = { ...doc.invoice, email: doc.invoice.email === null ? null : await services.personal.open(who.account_id, doc.invoice.email, 'email') };
  if (file[2] === 'json') {
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.send(JSON.stringify(invoice, null, 2));
    return;
  }
  const pdf = await renderInvoicePdf(invoice, { name: SERVICE_NAME, baseUrl: services.baseUrl() });
  res.setHeader('Content-Type', 'application/pdf');
  res.setHeader('Content-Disposition', `attachment; filename="invoice-${doc.number}.pdf"`);
  res.send(pdf);
}
