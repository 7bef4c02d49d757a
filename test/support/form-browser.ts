import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A browser as far as the account pages need one: keeps the cookies the server sets and sends
 * them back, posts forms with their CSRF token, from a client address of its own, named in
 * X-Forwarded-For: the server must trust its loopback peer as a proxy (`TRUST_PROXY=loopback`).
 */
export class FormBrowser {
  readonly jar = new Map<string, string>();
  readonly setCookies: string[] = [];
  constructor(
    private readonly base: () => string,
    readonly client: string,
  ) {}

  async request(path: string, form?: Record<string, string>) {
    const cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const headers: Record<string, string> = { cookie, 'x-forwarded-for': this.client };
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const r = await fetch(this.base() + path, { method: form ? 'POST' : 'GET', redirect: 'manual', headers, body: form ? new URLSearchParams(form).toString() : undefined });
    for (const c of r.headers.getSetCookie()) {
      this.setCookies.push(c);
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const value = pair!.slice(i + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) this.jar.delete(pair!.slice(0, i));
      else this.jar.set(pair!.slice(0, i), value);
    }
    return { status: r.status, text: await r.text(), headers: r.headers };
  }

  /** Posts `fields` to `action` with the CSRF token of `page`. */
  async submit(page: string, action: string, fields: Record<string, string> = {}) {
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
    expect(csrf, 'the page has a CSRF token').to.be.a('string');
    return this.request(action, { _csrf: csrf!, ...fields });
  }
}

/** The sign-in links mailed to `email` so far (the outbox's files, quoted-printable decoded). */
export function linksTo(dataDir: string, email: string): string[] {
  const outbox = join(dataDir, 'outbox');
  let files: string[] = [];
  try {
    files = readdirSync(outbox).sort();
  } catch {
    return [];
  }
  return files
    .map((f) => readFileSync(join(outbox, f), 'utf8').replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))))
    .filter((m) => m.toLowerCase().includes(`to: ${email.trim().toLowerCase()}`))
    .map((m) => /\/account\/sign-in\/([A-Za-z0-9_-]+)/.exec(m)![1]!);
}
