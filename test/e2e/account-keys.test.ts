/**
 * Keys on the account page over real HTTP, as a browser without JavaScript uses it (forms with
 * their CSRF token, the session cookie): the cap on active keys, revoking a key in its grace period,
 * and revocation or rotation of a key ending the grace of the key it replaced.
 */
import { expect } from 'chai';
import { MAX_ACTIVE_KEYS_PER_ACCOUNT } from '../../src/domain/accounts/api-keys.js';
import { accountStream } from '../../src/domain/accounts/account.events.js';
import { FormBrowser, linksTo } from '../support/form-browser.js';
import { startTestServer, wallClockPlus, type TestServer } from '../support/server.js';

const NOW = '2019-04-10T12:00:00Z';
const EMAIL = 'keys.owner@example.com';

describe('Keys on the account page', function () {
  this.timeout(120_000);
  let server: TestServer;
  let browser: FormBrowser;
  let accountId = '';
  /** Every key the pages showed, by its id. */
  const keyOf = new Map<string, string>();
  /** The wall clock a grace period ends on: real time, moved forward by hand. */
  const wall = wallClockPlus();

  before(async () => {
    server = await startTestServer({ now: NOW, transportClock: wall });
    browser = new FormBrowser(() => server.url, '10.77.0.1');
  });
  after(() => server?.stop());

  const account = () => browser.request('/account');
  const statusOf = async (key: string) => {
    const r = await fetch(`${server.url}/v1/usage`, { headers: { 'X-API-Key': key } });
    return { status: r.status, code: r.status === 200 ? null : ((await r.json()) as { code: string }).code };
  };
  /** The key a page shows once, and its id as the keys table names it. */
  const shownKey = (text: string) => {
    const key = /id="new-key">([^<]+)</.exec(text)?.[1];
    expect(key, 'the page shows a new key').to.be.a('string');
    const prefix = key!.slice(0, 14);
    const id = new RegExp(`<code>${prefix}…</code></td><td[^>]*>([^<]+)</td>`).exec(text)?.[1];
    expect(id, `the keys table lists ${prefix}`).to.be.a('string');
    keyOf.set(id!, key!);
    return { key: key!, id: id! };
  };
  /** The cell of the keys table's row for key `id`: its status and its buttons. */
  const rowOf = (text: string, id: string) => {
    const row = new RegExp(`<td[^>]*>${id}</td>(.*?)</tr>`, 's').exec(text)?.[1];
    expect(row, `a row for ${id}`).to.be.a('string');
    return row!;
  };
  const hasButton = (text: string, id: string, action: 'revoke' | 'rotate') =>
    new RegExp(`action="/account/keys/${id}/${action}"[^]*?<button type="submit">${action === 'revoke' ? 'Revoke' : 'Rotate'}</button>`).test(rowOf(text, id));
  /** The account page a key form redirects to, where the new key is shown once; a reload does not show it again. */
  const shownOnce = async (r: { status: number; text: string; headers: Headers }) => {
    expect(r.status, r.text.slice(0, 300)).to.equal(303);
    expect(r.headers.get('location')).to.equal('/account#new-key');
    const page = (await account()).text;
    const shown = shownKey(page);
    const reload = (await account()).text;
    expect(reload, 'a reload shows the key no more').not.to.include('id="new-key"');
    return { ...shown, page: reload };
  };
  const rotate = async (id: string) => shownOnce(await browser.submit((await account()).text, `/account/keys/${id}/rotate`, { grace_hours: '24' }));
  const revoke = async (id: string) => {
    const page = (await account()).text;
    expect(hasButton(page, id, 'revoke'), `a Revoke button for ${id}`).to.equal(true);
    const r = await browser.submit(page, `/account/keys/${id}/revoke`);
    expect(r.status, r.text.slice(0, 300)).to.equal(303);
  };

  it(`signs in and creates keys up to ${MAX_ACTIVE_KEYS_PER_ACCOUNT}, then refuses the next with a 422 limit_exceeded page that changes nothing, even when two race for the last place`, async () => {
    const form = await browser.request('/account/sign-in');
    await browser.submit(form.text, '/account/sign-in', { email: EMAIL });
    const [token] = linksTo(server.dir, EMAIL);
    const confirm = await browser.request(`/account/sign-in/${token}`);
    const welcome = await browser.submit(confirm.text, `/account/sign-in/${token}`);
    expect(welcome.status).to.equal(200);
    await server.services.runner.waitForHead();
    let page = (await account()).text;
    accountId = /account <code>([^<]+)<\/code>/.exec(page)![1]!;
    const firstId = /<\/code><\/td><td[^>]*>(key_[^<]+)<\/td>/.exec(page)![1]!;
    keyOf.set(firstId, /id="new-key">([^<]+)</.exec(welcome.text)![1]!);
    expect(page).to.include(`1 of ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys`);

    for (let n = 2; n < MAX_ACTIVE_KEYS_PER_ACCOUNT; n++) page = (await shownOnce(await browser.submit(page, '/account/keys'))).page;
    // Two forms for the last place at once: the account decider gives it to one of them.
    const race = await Promise.all([browser.submit(page, '/account/keys'), browser.submit(page, '/account/keys')]);
    expect(race.map((r) => r.status).sort()).to.deep.equal([303, 422]);
    await shownOnce(race.find((r) => r.status === 303)!);
    page = (await account()).text;
    expect(page).to.include(`${MAX_ACTIVE_KEYS_PER_ACCOUNT} of ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys: revoke one to create another`);

    const before = (await server.services.events.readStream(accountStream(accountId))).length;
    const refused = await browser.submit(page, '/account/keys');
    expect(refused.status).to.equal(422);
    expect(refused.headers.get('content-type')).to.match(/^text\/html/);
    expect(refused.text).to.include('<code>limit_exceeded</code>');
    expect(refused.text).to.include(`at most ${MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys`);
    expect(refused.text).not.to.include('id="new-key"');
    expect((await server.services.events.readStream(accountStream(accountId))).length).to.equal(before);
    // Every key still works, the cap changed none of them.
    for (const key of keyOf.values()) expect((await statusOf(key)).status).to.equal(200);
  });

  it('still rotates a key at the cap (a replacement, not one more key), and a freed place takes a new key', async () => {
    const [first] = [...keyOf.keys()];
    const next = await rotate(first!);
    expect((await statusOf(keyOf.get(first!)!)).status, 'the old key in its grace').to.equal(200);
    expect((await statusOf(next.key)).status).to.equal(200);
    expect((await browser.submit((await account()).text, '/account/keys')).status).to.equal(422);
    await revoke(next.id);
    await shownOnce(await browser.submit((await account()).text, '/account/keys'));
  });

  it('offers a Revoke button for a rotated key in its grace period, and revoking it there makes it 403 key_forbidden', async () => {
    const ids = [...keyOf.keys()];
    const old = ids[2]!;
    const next = await rotate(old);
    const page = (await account()).text;
    // A grace period runs on the wall clock (24 hours from the rotation), not the data's pinned one.
    const until = /rotated \(works until (\S+)\)/.exec(rowOf(page, old))?.[1];
    expect(Date.parse(until!) - Date.now(), `works until ${until}`).to.be.within(23 * 3_600_000, 24 * 3_600_000);
    expect(hasButton(page, old, 'rotate')).to.equal(false);
    expect((await statusOf(keyOf.get(old)!)).status).to.equal(200);

    await revoke(old);
    expect(await statusOf(keyOf.get(old)!)).to.deep.equal({ status: 403, code: 'key_forbidden' });
    expect((await statusOf(next.key)).status, 'its successor is untouched').to.equal(200);
    const after = (await account()).text;
    expect(rowOf(after, old)).to.match(/<td[^>]*>revoked<\/td>/);
    expect(hasButton(after, old, 'revoke')).to.equal(false);
  });

  it("ends the predecessor's grace when its successor is revoked: both keys are 403 key_forbidden", async () => {
    const old = [...keyOf.keys()][3]!;
    const next = await rotate(old);
    expect((await statusOf(keyOf.get(old)!)).status).to.equal(200);
    await revoke(next.id);
    expect(await statusOf(next.key)).to.deep.equal({ status: 403, code: 'key_forbidden' });
    expect(await statusOf(keyOf.get(old)!)).to.deep.equal({ status: 403, code: 'key_forbidden' });
    expect(rowOf((await account()).text, old)).to.match(/<td[^>]*>revoked<\/td>/);
  });

  it("ends the predecessor's grace when its successor is rotated in turn: only the newest two keys work", async () => {
    const oldest = [...keyOf.keys()][4]!;
    const middle = await rotate(oldest);
    const newest = await rotate(middle.id);
    expect(await statusOf(keyOf.get(oldest)!)).to.deep.equal({ status: 403, code: 'key_forbidden' });
    expect((await statusOf(middle.key)).status, 'the rotated key in its own grace').to.equal(200);
    expect((await statusOf(newest.key)).status).to.equal(200);
  });
  it("ends a rotated key's grace on the wall clock whatever the data's pinned clock says: the page shows it ended, the key is refused", async () => {
    const page = (await account()).text;
    const active = [...keyOf.keys()].find((id) => hasButton(page, id, 'rotate'));
    expect(active, 'an active key to rotate').to.be.a('string');
    const next = await rotate(active!);
    expect(rowOf((await account()).text, active!)).to.match(/rotated \(works until /);
    wall.advance(25 * 3_600_000);
    try {
      expect(rowOf((await account()).text, active!)).to.match(/rotated \(worked until /);
      expect(await statusOf(keyOf.get(active!)!)).to.deep.equal({ status: 403, code: 'key_forbidden' });
      expect((await statusOf(next.key)).status, 'its successor works').to.equal(200);
      expect(server.services.clock.now().toISOString(), 'the data clock did not move').to.equal(new Date(NOW).toISOString());
    } finally {
      wall.advance(-25 * 3_600_000);
    }
  });
});
