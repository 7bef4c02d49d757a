import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { TestServer } from './server.js';

const SESSION_COOKIE = '__Host-scores.sid';

/**
 * Signs `page` in by the emailed link, as a user would: the sign-in form, the outbox's newest mail
 * to `email`, its link, the confirm button. Playwright refuses the Secure session cookie for an
 * http URL; when the context did not keep it, the same value is given for https (Chromium sends it
 * to 127.0.0.1).
 */
export async function signInByEmail(page: Page, server: TestServer, email: string): Promise<void> {
  await page.goto(`${server.url}/account/sign-in`);
  await page.getByLabel('Email address').fill(email);
  await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
  await page.getByRole('heading', { name: 'Check your email' }).waitFor();
  const outbox = join(server.dir, 'outbox');
  const mail = readdirSync(outbox)
    .filter((f) => f.endsWith('.eml'))
    .sort()
    .reverse()
    .map((f) => readFileSync(join(outbox, f), 'utf8').replace(/=\r?\n/g, ''))
    .find((m) => /Subject: Your sign-in link/i.test(m) && m.toLowerCase().includes(`to: ${email.toLowerCase()}`));
  const link = new RegExp(`${server.url.replace(/[.:/]/g, '\\$&')}/account/sign-in/[A-Za-z0-9_-]+`).exec(mail ?? '')?.[0];
  expect(link, `a sign-in link to ${email} in the outbox`).to.be.a('string');
  await page.goto(link!);
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && /\/account\/sign-in\/[A-Za-z0-9_-]+$/.test(r.url())),
    page.getByRole('button', { name: 'Sign in' }).click(),
  ]);
  await page.waitForLoadState('load');
  const context = page.context();
  if ((await context.cookies()).some((c) => c.name === SESSION_COOKIE)) return;
  const sent = (await response.headersArray()).find((h) => h.name.toLowerCase() === 'set-cookie' && h.value.startsWith(`${SESSION_COOKIE}=`));
  expect(sent, 'the sign-in sets the session cookie').to.not.equal(undefined);
  const value = sent!.value.slice(SESSION_COOKIE.length + 1).split(';')[0]!;
  await context.addCookies([{ name: SESSION_COOKIE, value, url: `${server.url.replace(/^http:/, 'https:')}/`, secure: true, httpOnly: true, sameSite: 'Lax' }]);
}
