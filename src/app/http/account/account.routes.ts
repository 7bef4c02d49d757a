/**
 * The account page and its actions (`/account…`), for a signed-in session. Every action goes
 * through the same commands as the CLI and the API (keys, ledger, billing), so the account page
 * is a second front door to one set of deciders. Another account's key, webhook or invoice is 404.
 */
import type { Express, NextFunction, Request, Response } from 'express';
import { join } from 'node:path';
import type { Services } from '../../container.js';
import { issueKey, loadAccount, revokeKey, rotateKey } from '../../../../commands/manage-keys/keys.handler.js';
import { buyPack, downgradePlan, endPro, proQuote, startPro, upgradeQuote, upgradePlan } from '../../../../commands/billing/billing.handler.js';
import { getUsageLedger } from '../../../../queries/get-usage-ledger/get-usage-ledger.query.js';
import { listDeliveries, listWebhooks } from '../../../../queries/get-webhooks/get-webhooks.query.js';
import { renderInvoicePdf } from '../../../../queries/get-invoices/invoice-pdf.js';
import { invoices, invoicesProjection, type InvoiceDoc } from '../../../../projections/invoices/invoices.projection.js';
import { usageDays, usageDaysProjection } from '../../../../projections/usage-days/usage-days.projection.js';
import { AppError, notFound } from '../../../core/errors.js';
import { projectRoot } from '../../../core/paths.js';
import { formatUsd, monthName } from '../../../domain/billing/invoice.js';
import { monthlyPriceCents } from '../../../domain/billing/proration.js';
import { stateAt, usageFigures } from '../../../domain/ledger/ledger.figures.js';
import { CREDIT_PACKS, isTier, PLANS, tierName as title } from '../../../domain/plans.js';
import { html, SERVICE_NAME, type SafeHtml } from '../pages/html.js';
import { accountErrorPage, csrfField, sendAccountPage, signedIn, type AccountWeb, type Signed } from './account-web.js';
import { accountBody, chartHead, newKeyNotice } from './account.page.js';
import { USAGE_CHART_JS } from './usage-chart.js';


type Handler = (req: Request, res: Response, signed: Signed) => Promise<void>;

export function registerAccountRoutes(app: Express, services: Services, web: AccountWeb): void {
  const billing = { ledger: services.ledger, billing: services.billing, clock: services.clock };

  /** A route for a signed-in session: others are sent to sign in. */
  const signed =
    (handler: Handler) =>
    async (req: Request, res: Response, next: NextFunction): Promise<void> => {
      const who = signedIn(res);
      if (!who) {
        if (req.method === 'GET') return res.redirect(303, '/account/sign-in');
        return sendAccountPage(res, 401, 'Signed out', html`<h1>You are signed out</h1><p><a href="/account/sign-in">Sign in</a> to continue: nothing was changed.</p>`);
      }
      try {
        await handler(req, res, who);
      } catch (err) {
        if (err instanceof AppError) return accountErrorPage(err, res);
        next(err);
      }
    };

  const field = (req: Request, name: string): string => {
    const v = (req.body as Record<string, unknown> | undefined)?.[name];
    return typeof v === 'string' ? v : '';
  };

  async function ownKey(accountId: string, keyId: string) {
    const account = await loadAccount(services.events, accountId);
    if (!account.keys.has(keyId)) throw notFound('No such key on this account');
  }

  async function render(req: Request, res: Response, who: Signed, notice?: SafeHtml): Promise<void> {
    const now = services.clock.now();
    await services.queries.ledgerCaughtUp(who.account_id);
    await services.reads.register([...invoicesProjection.collections, ...usageDaysProjection.collections]);
    const account = await loadAccount(services.events, who.account_id);
    const state = stateAt(await services.ledger.state(who.account_id), now);
    const figures = usageFigures(state, now);
    const cursor = typeof req.query['cursor'] === 'string' ? req.query['cursor'] : null;
    const [days, ledger, webhooks, invoiceList] = await Promise.all([
      services.reads.find(usageDays, { account_id: who.account_id, day: { $gte: `${figures.period}-01`, $lte: `${figures.period}-31` } }, { sort: [['day', 1]], limit: 31 }),
      getUsageLedger(services.reads, services.events, { accountId: who.account_id, limit: 25, cursor }),
      listWebhooks(services.reads, who.account_id),
      services.reads.find(invoices, { account_id: who.account_id }, { sort: [['period', -1]], limit: 24 }),
    ]);
    const body = accountBody({
      account_id: who.account_id,
      email: account.email,
      now,
      figures,
      scheduled: state.cancellation_effective_at ? { tier: state.scheduled_tier ?? 'free', at: state.cancellation_effective_at } : null,
      keys: [...account.keys.values()],
      days: days.items,
      ledger,
      webhooks: webhooks.webhooks,
      invoices: invoiceList.items,
      csrf: web.csrfToken(req, res),
      purchaseIds: CREDIT_PACKS.map(() => services.ids.next('', 12)),
      notice,
    });
    sendAccountPage(res, 200, 'Your account', body, chartHead);
  }

  const done = (res: Response, anchor: string) => res.redirect(303, `/account#${anchor}`);
  const mw = web.middleware;

  app.get('/account', ...mw, signed((req, res, who) => render(req, res, who)));

  app.post('/account/keys', ...mw, signed(async (req, res, who) => {
    const issued = await issueKey(services, who.account_id);
    await services.runner.waitForHead();
    await render(req, res, who, newKeyNotice(issued.key, issued.prefix));
  }));

  app.post('/account/keys/:id/rotate', ...mw, signed(async (req, res, who) => {
    const keyId = String(req.params['id']);
    await ownKey(who.account_id, keyId);
    const hours = Number(field(req, 'grace_hours') || '0');
    if (![0, 24, 168].includes(hours)) throw new AppError('bad_request', 'Choose a grace period offered on the page');
    const rotated = await rotateKey(services, keyId, hours * 3600);
    await services.runner.waitForHead();
    await render(req, res, who, newKeyNotice(rotated.key, rotated.prefix));
  }));

  app.post('/account/keys/:id/revoke', ...mw, signed(async (req, res, who) => {
    const keyId = String(req.params['id']);
    await ownKey(who.account_id, keyId);
    await revokeKey(services, keyId);
    await services.runner.waitForHead();
    done(res, 'keys');
  }));

  app.post('/account/overage', ...mw, signed(async (req, res, who) => {
    const on = field(req, 'on');
    if (on !== 'on' && on !== 'off') throw new AppError('bad_request', 'on must be on or off');
    await services.ledger.switchOverage(who.account_id, on === 'on');
    done(res, 'usage');
  }));

  // A plan change: the page shows what it costs and when it applies; the form confirms it.
  app.get('/account/plan', ...mw, signed(async (req, res, who) => {
    const tier = typeof req.query['tier'] === 'string' ? req.query['tier'] : '';
    if (!isTier(tier)) throw new AppError('bad_request', `Unknown plan ${tier}`);
    const now = services.clock.now();
    const state = stateAt(await services.ledger.state(who.account_id), now);
    const from = monthlyPriceCents(state.tier);
    const to = monthlyPriceCents(tier);
    const csrf = csrfField(web.csrfToken(req, res));
    if (from !== null && to !== null && to < from) {
      return sendAccountPage(res, 200, 'Change plan', html`<h1>Move to ${title(tier)}</h1>
<p>Your plan stays ${title(state.tier)} until the end of ${monthName(state.period ?? '')}; from ${state.resets_at} it is ${title(tier)}, ${formatUsd(to)} a month. A move to a cheaper plan is not prorated: nothing is charged now.</p>
<form method="post" action="/account/plan">${csrf}<input type="hidden" name="tier" value="${tier}"><button type="submit">Move to ${title(tier)} at the end of the month</button></form><p><a href="/account">Cancel</a></p>`);
    }
    const quote = await upgradeQuote(billing, who.account_id, tier);
    sendAccountPage(res, 200, 'Upgrade', html`<h1>Upgrade to ${title(tier)}</h1>
<p>${title(tier)} costs ${formatUsd(to!)} a month, ${formatUsd(quote.monthly_difference_cents)} more than ${title(state.tier)}.</p>
<p>Charged now, for the <strong>${quote.days}</strong> of ${quote.days_in_month} days left in ${monthName(state.period ?? '')} (today included): <strong id="prorated-amount">${formatUsd(quote.amount_cents)}</strong>.</p>
<p>The new plan and its allowance (${(PLANS[tier].monthly_allowance ?? 0).toLocaleString('en-US')} credits) apply at once.</p>
<form method="post" action="/account/plan">${csrf}<input type="hidden" name="tier" value="${tier}"><input type="hidden" name="amount_cents" value="${quote.amount_cents}"><button type="submit">Pay ${formatUsd(quote.amount_cents)} and upgrade</button></form><p><a href="/account">Cancel</a></p>`);
  }));

  app.post('/account/plan', ...mw, signed(async (req, res, who) => {
    const tier = field(req, 'tier');
    if (!isTier(tier)) throw new AppError('bad_request', `Unknown plan ${tier}`);
    const amount = field(req, 'amount_cents');
    if (amount === '') await downgradePlan(billing, who.account_id, tier);
    else await upgradePlan(billing, who.account_id, tier, Number(amount));
    done(res, 'plan');
  }));

  app.get('/account/pro', ...mw, signed(async (req, res, who) => {
    const quote = await proQuote(billing, who.account_id);
    sendAccountPage(res, 200, 'Pro membership', html`<h1>Pro membership</h1>
<p>${formatUsd(quote.monthly_difference_cents)} a month. Charged now for the ${quote.days} of ${quote.days_in_month} days left this month: <strong id="prorated-amount">${formatUsd(quote.amount_cents)}</strong>. Every key of this account gets live data, the full universe, a year of history and 5,000 credits a month at once.</p>
<form method="post" action="/account/pro">${csrfField(web.csrfToken(req, res))}<input type="hidden" name="amount_cents" value="${quote.amount_cents}"><button type="submit">Pay ${formatUsd(quote.amount_cents)} and become a member</button></form><p><a href="/account">Cancel</a></p>`);
  }));

  app.post('/account/pro', ...mw, signed(async (req, res, who) => {
    await startPro(billing, who.account_id, Number(field(req, 'amount_cents')));
    done(res, 'plan');
  }));

  app.post('/account/pro/end', ...mw, signed(async (_req, res, who) => {
    await endPro(billing, who.account_id);
    done(res, 'plan');
  }));

  app.post('/account/packs', ...mw, signed(async (req, res, who) => {
    await buyPack(billing, who.account_id, field(req, 'pack'), field(req, 'purchase'));
    done(res, 'plan');
  }));

  app.get('/account/invoices/:file', ...mw, signed(async (req, res, who) => {
    const m = /^([A-Z0-9]+-\d{4})\.(pdf|json)$/.exec(String(req.params['file']));
    await services.reads.register(invoicesProjection.collections);
    const doc: InvoiceDoc | null = m ? await services.reads.get(invoices, `${who.account_id}|${m[1]}`) : null;
    if (!m || !doc) throw notFound('No such invoice on this account');
    if (m[2] === 'json') {
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.send(JSON.stringify(doc.invoice, null, 2));
      return;
    }
    const pdf = await renderInvoicePdf(doc.invoice, { name: SERVICE_NAME, baseUrl: services.baseUrl() });
    res.setHeader('Content-Type', 'application/pdf');
    res.setHeader('Content-Disposition', `attachment; filename="invoice-${doc.number}.pdf"`);
    res.send(pdf);
  }));

  app.get('/account/webhooks/:id', ...mw, signed(async (req, res, who) => {
    const id = Number(req.params['id']);
    const list = await listWebhooks(services.reads, who.account_id);
    const hook = Number.isSafeInteger(id) ? list.webhooks.find((w) => w.id === id) : undefined;
    if (!hook) throw notFound('No such webhook on this account');
    const { deliveries } = await listDeliveries(services.reads, who.account_id, id);
    sendAccountPage(res, 200, `Webhook ${id}`, html`<h1>Webhook ${id}</h1><p>${hook.event_type} → <code>${hook.url}</code>, ${hook.is_active ? 'active' : 'paused'}.</p>
<table aria-label="Latest deliveries"><thead><tr><th>At</th><th>Kind</th><th>Events</th><th>Result</th></tr></thead><tbody>${deliveries.map(
      (d) => html`<tr><td>${d.created_at}</td><td>${d.kind}</td><td class="num">${d.event_count}</td><td>${d.ok ? `ok (${d.status_code ?? ''})` : `failed: ${d.error ?? d.status_code ?? ''}`}</td></tr>`,
    )}</tbody></table><p><a href="/account#webhooks">Back</a></p>`);
  }));

  // uPlot from the package itself, and the chart script: nothing from a CDN.
  const uplot = join(projectRoot(), 'node_modules/uplot/dist');
  app.get('/account/assets/uPlot.iife.min.js', (_req, res) => res.sendFile(join(uplot, 'uPlot.iife.min.js'), { maxAge: '1d' }));
  app.get('/account/assets/uPlot.min.css', (_req, res) => res.sendFile(join(uplot, 'uPlot.min.css'), { maxAge: '1d' }));
  app.get('/account/assets/usage-chart.js', (_req, res) => {
    res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.send(USAGE_CHART_JS);
  });

  // Errors of the account pages are pages, with the stable code (a bad CSRF token included).
  app.use('/account', (err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    try {
      accountErrorPage(err, res);
    } catch {
      next(err);
    }
  });
}
