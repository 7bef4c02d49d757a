import { expect } from 'chai';
import { fixedClock } from '../../src/core/clock.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { emailStream, sessionStream } from '../../src/domain/accounts/session.events.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createAccountWithKey } from '../../commands/manage-keys/keys.handler.js';
import { FormBrowser, linksTo as mailedLinks } from '../support/form-browser.js';

const NOW = '2019-04-10T12:00:00Z';
/** The wall clock's start: another day than the data's, as on a demo pinned by SCORES_NOW. */
const WALL = '2026-06-01T09:00:00Z';

let clients = 0;
/** A browser of the account pages, from a client address of its own. */
class Browser extends FormBrowser {
  constructor(server: TestServer) {
    super(() => server.url, `10.0.${Math.floor(++clients / 250)}.${clients % 250}`);
  }
}

/** Sign-in by emailed link over real HTTP: the mail, the link, the account, the session. */
describe('Sign-in by emailed link', function () {
  this.timeout(120_000);
  let server: TestServer;
  // Links, sessions and the mail budget run on the wall clock (the transport clock), which this
  // suite moves by hand; the data's clock stays pinned at NOW, as SCORES_NOW pins it.
  const wall = fixedClock(WALL);
  const clock = () => wall;

  before(async () => {
    // Behind a proxy on loopback: each Browser is its own client, by X-Forwarded-For.
    server = await startTestServer({ now: NOW, env: { TRUST_PROXY: 'loopback' }, transportClock: wall });
  });
  after(() => server.stop());

  const linksTo = (email: string) => mailedLinks(server.dir, email);

  async function askLink(b: Browser, email: string) {
    const form = await b.request('/account/sign-in');
    return b.submit(form.text, '/account/sign-in', { email });
  }

  /** Asks a link for `email` and returns it (the one link the outbox did not hold before). */
  async function newLink(b: Browser, email: string): Promise<string> {
    const before = new Set(linksTo(email));
    await askLink(b, email);
    const fresh = linksTo(email).filter((t) => !before.has(t));
    expect(fresh, `one new link for ${email}`).to.have.length(1);
    return fresh[0]!;
  }

  async function signIn(b: Browser, email: string) {
    const token = await newLink(b, email);
    const confirm = await b.request(`/account/sign-in/${token}`);
    return { token, answer: await b.submit(confirm.text, `/account/sign-in/${token}`) };
  }

  it('answers the same page for an address with an account and one without, and mails both', async () => {
    const known = new Browser(server);
    await signIn(known, 'known@example.com');
    const a = await askLink(new Browser(server), 'known@example.com');
    const b = await askLink(new Browser(server), 'stranger@example.com');
    expect(a.status).to.equal(200);
    expect(b.status).to.equal(200);
    expect(a.text.replace('known@example.com', 'X')).to.equal(b.text.replace('stranger@example.com', 'X').replace(/name="_csrf" value="[^"]+"/, ''));
    expect(linksTo('stranger@example.com')).to.have.length(1);
  });

  it('creates the account, its free key and ledger on the first sign-in, and signs the same account in later without a new key', async () => {
    const b = new Browser(server);
    const { answer } = await signIn(b, 'First.User@Example.com ');
    expect(answer.status).to.equal(200);
    const key = /id="new-key">([^<]+)</.exec(answer.text)![1]!;
    await server.services.runner.waitForHead();
    const api = await fetch(`${server.url}/v1/usage`, { headers: { 'X-API-Key': key } });
    expect(api.status).to.equal(200);
    expect(await api.json()).to.include({ tier: 'free' });
    const claim = await server.services.events.readStream(emailStream(sha256Hex('first.user@example.com')));
    expect(claim.map((e) => e.type)).to.deep.equal(['EmailClaimed']);

    const again = await signIn(new Browser(server), 'first.user@example.com');
    expect(again.answer.status).to.equal(303);
    expect(again.answer.headers.get('location')).to.equal('/account');
    expect(await server.services.events.readStream(emailStream(sha256Hex('first.user@example.com')))).to.have.length(1);
  });

  it('signs in to the account the operator created with that address (scores keys create --email), with no second account or key', async () => {
    const made = await createAccountWithKey(server.services, { tier: 'hobbyist', email: 'Operator.Made@Example.com' });
    await server.services.runner.waitForHead();
    const { answer } = await signIn(new Browser(server), 'operator.made@example.com');
    expect(answer.status).to.equal(303);
    expect(answer.headers.get('location')).to.equal('/account');
    const claims = await server.services.events.readStream(emailStream(sha256Hex('operator.made@example.com')));
    expect(claims.map((e) => (e.data as { account_id: string }).account_id)).to.deep.equal([made.account_id]);
  });

  it('sets the session as a __Host- cookie, Secure, HttpOnly, SameSite=Lax, holding an opaque id only', async () => {
    const b = new Browser(server);
    await signIn(b, 'cookie@example.com');
    const set = b.setCookies.find((c) => c.startsWith('__Host-scores.sid='))!;
    expect(set).to.match(/; Path=\//).and.match(/; HttpOnly/).and.match(/; Secure/).and.match(/; SameSite=Lax/);
    const id = b.jar.get('__Host-scores.sid')!;
    expect(id).to.match(/^[A-Za-z0-9_-]{43}$/);
    const events = await server.services.events.readStream(sessionStream(sha256Hex(id)));
    expect(events.map((e) => e.type)).to.deep.equal(['SessionStarted']);
    expect(JSON.stringify(events)).to.not.include(id);
    expect((await b.request('/account')).status).to.equal(200);
  });

  it('uses a link once: a second use, or two at once, signs in once', async () => {
    const b = new Browser(server);
    const { token } = await signIn(b, 'once@example.com');
    const replay = await b.request(`/account/sign-in/${token}`);
    expect(replay.status).to.equal(404);
    expect(replay.text).to.include('used already');

    const c = new Browser(server);
    const raceToken = await newLink(c, 'race@example.com');
    const confirm = await c.request(`/account/sign-in/${raceToken}`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(confirm.text)![1]!;
    const both = await Promise.all([c.request(`/account/sign-in/${raceToken}`, { _csrf: csrf }), c.request(`/account/sign-in/${raceToken}`, { _csrf: csrf })]);
    expect(both.map((r) => r.status).sort()).to.deep.equal([200, 404]);
  });

  it('makes one account when two first sign-ins of one address race', async () => {
    const [x, y] = [new Browser(server), new Browser(server)];
    const t1 = await newLink(x, 'twice@example.com');
    const t2 = await newLink(y, 'twice@example.com');
    const [c1, c2] = await Promise.all([x.request(`/account/sign-in/${t1}`), y.request(`/account/sign-in/${t2}`)]);
    const answers = await Promise.all([x.submit(c1.text, `/account/sign-in/${t1}`), y.submit(c2.text, `/account/sign-in/${t2}`)]);
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 303]);
    const claims = await server.services.events.readStream(emailStream(sha256Hex('twice@example.com')));
    expect(claims).to.have.length(1);
  });

  it('refuses a link after 15 minutes, and ends a session after 7 days', async () => {
    const b = new Browser(server);
    await signIn(b, 'later@example.com');
    const token = await newLink(new Browser(server), 'late@example.com');
    clock().set(new Date(Date.parse(WALL) + 16 * 60_000).toISOString());
    try {
      const late = await b.request(`/account/sign-in/${token}`);
      expect(late.status).to.equal(404);
      expect(late.text).to.include('more than 15 minutes ago');
      expect((await b.request('/account')).status).to.equal(200);
      clock().set(new Date(Date.parse(WALL) + 8 * 86_400_000).toISOString());
      const expired = await b.request('/account');
      expect(expired.status).to.equal(303);
      expect(expired.headers.get('location')).to.equal('/account/sign-in');
    } finally {
      clock().set(WALL);
    }
  });

  it('signs out: the session ends in the log, and its id no longer signs in', async () => {
    const b = new Browser(server);
    await signIn(b, 'leaving@example.com');
    const id = b.jar.get('__Host-scores.sid')!;
    const account = await b.request('/account');
    const out = await b.submit(account.text.slice(account.text.indexOf('action="/account/sign-out"') - 200), '/account/sign-out');
    expect(out.status).to.equal(303);
    expect(b.jar.has('__Host-scores.sid')).to.equal(false);
    const events = await server.services.events.readStream(sessionStream(sha256Hex(id)));
    expect(events.map((e) => e.type)).to.deep.equal(['SessionStarted', 'SessionEnded']);
    b.jar.set('__Host-scores.sid', id);
    expect((await b.request('/account')).status).to.equal(303);
  });

  it('refuses a malformed address with 400 and mails nothing', async () => {
    const b = new Browser(server);
    for (const email of ['', 'no-at-sign', 'a@b', 'two@example.com, three@example.com']) {
      const r = await askLink(b, email);
      expect(r.status, email).to.equal(400);
      expect(r.text).to.include('Enter one email address');
    }
  });

  it('limits sign-in requests to 10 per client address per hour (429 with Retry-After); another client is not held back', async () => {
    const b = new Browser(server);
    const answers = [];
    for (let i = 0; i < 11; i++) answers.push(await askLink(b, `other${i}@example.com`));
    expect(answers.map((a) => a.status)).to.deep.equal([...Array<number>(10).fill(200), 429]);
    expect(Number(answers[10]!.headers.get('retry-after'))).to.be.within(1, 3600);
    expect(answers[10]!.text).to.include('rate_limited');
    expect(linksTo('other10@example.com')).to.have.length(0);
    expect((await askLink(new Browser(server), 'other10@example.com')).status).to.equal(200);
  });

  describe("When strangers ask links for someone else's address", () => {
    /** What a page tells: its status, its headers but the ones every response varies, its text without the CSRF token. */
    const told = (a: Awaited<ReturnType<typeof askLink>>) => ({
      status: a.status,
      headers: [...a.headers].filter(([name]) => !['date', 'x-request-id', 'set-cookie'].includes(name)),
      text: a.text.replace(/name="_csrf" value="[^"]+"/, ''),
    });

    /** `requests` asks for `email`, each from its browser; the answers, and the links mailed in the order they went. */
    async function flood(email: string, requests: Browser[]) {
      const answers = [];
      const mailed: string[] = [];
      for (const b of requests) {
        answers.push(await askLink(b, email));
        mailed.push(...linksTo(email).filter((t) => !mailed.includes(t)));
      }
      return { answers, mailed };
    }
    const strangers = (n: number) => Array.from({ length: n }, () => new Browser(server));

    it('mails the address at most 3 times, and answers every request the page of a request that mailed (no 429)', async () => {
      // One stranger from one address, then strangers from many (a botnet).
      const one = new Browser(server);
      const { answers, mailed } = await flood('victim@example.com', [one, one, one, one, one, ...strangers(20)]);
      expect(mailed).to.have.length(3);
      const first = told(answers[0]!);
      expect(first.status).to.equal(200);
      expect(first.headers.map(([name]) => name)).to.not.include('retry-after');
      for (const [i, a] of answers.entries()) expect(told(a), `request ${i + 1}`).to.deep.equal(first);
    });

    it('lets the owner sign in with the newest link mailed, after asking again from their own address', async () => {
      const address = 'owner@example.com';
      const { mailed } = await flood(address, strangers(10));
      const owner = new Browser(server);
      const asked = await askLink(owner, address);
      expect(asked.status).to.equal(200);
      expect(asked.text).to.include('at most 3 links in 15 minutes');
      expect(linksTo(address), 'asking again mailed nothing').to.have.length(3);
      const newest = mailed.at(-1)!;
      const confirm = await owner.request(`/account/sign-in/${newest}`);
      expect(confirm.status).to.equal(200);
      const signed = await owner.submit(confirm.text, `/account/sign-in/${newest}`);
      expect(signed.status).to.equal(200);
      expect(signed.text).to.match(/id="new-key">sk_live_/);
      expect((await owner.request('/account')).status).to.equal(200);
    });

    it('keeps the newest link valid for as long as requests are turned away, and mails again once 15 minutes have passed', async () => {
      const address = 'flooded@example.com';
      const { mailed } = await flood(address, strangers(6));
      expect(mailed).to.have.length(3);
      try {
        clock().set(new Date(Date.parse(WALL) + 15 * 60_000 - 1000).toISOString());
        await askLink(new Browser(server), address);
        expect(linksTo(address), 'the last second of the window').to.have.length(3);
        expect((await new Browser(server).request(`/account/sign-in/${mailed.at(-1)!}`)).status).to.equal(200);
        clock().set(new Date(Date.parse(WALL) + 15 * 60_000).toISOString());
        const owner = new Browser(server);
        const token = await newLink(owner, address);
        const confirm = await owner.request(`/account/sign-in/${token}`);
        expect((await owner.submit(confirm.text, `/account/sign-in/${token}`)).status).to.equal(200);
      } finally {
        clock().set(WALL);
      }
    });
  });
});
