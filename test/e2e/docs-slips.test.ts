/**
 * The docs' slips over HTTP: the errors page's coverage example is what a free key is really
 * told for that ticker, and /docs's policy admits no outside source (Redoc's logo, its CDN's,
 * is replaced as the bundle is served: issue 45).
 */
import { expect } from 'chai';
import type { TestServer } from '../support/server.js';
import { demoKey, getJson, startTestServer } from '../support/server.js';

describe('Docs slips (issue 33 item 6)', function () {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ now: '2019-04-01T12:00:00Z' });
  });
  after(async () => server?.stop());

  it("/docs/errors' coverage example is the very problem a free key gets for a ticker outside top100", async () => {
    const page = await (await fetch(`${server.url}/docs/errors`)).text();
    const example = /<pre><code>([\s\S]*?)<\/code><\/pre>/.exec(page)?.[1]?.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
    const shown = JSON.parse(example!) as { code: string; detail: string; coverage: string };
    expect(shown.code).to.equal('coverage');
    expect(page).not.to.contain('TSLA');
    const ticker = /^(\S+) is outside/.exec(shown.detail)![1]!;
    const real = await getJson(`${server.url}/v1/scores/${ticker}`, demoKey(server.dir, 'free'));
    expect(real.status).to.equal(403);
    expect(real.body).to.include({ code: 'coverage', detail: shown.detail, coverage: shown.coverage });
    // TSLA, the old example, is inside the free universe.
    expect((await getJson(`${server.url}/v1/scores/TSLA`, demoKey(server.dir, 'free'))).status).to.equal(200);
  });

  it("/docs's policy admits nothing from another host, and the Redoc bundle it serves names no CDN", async () => {
    const csp = (await fetch(`${server.url}/docs`)).headers.get('content-security-policy') ?? '';
    const directives: Record<string, string[]> = Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k, v]));
    const outside = Object.entries(directives).filter(([, v]) => v.some((s) => /^https?:/.test(s)));
    expect(outside).to.deep.equal([]);
    const bundle = await (await fetch(`${server.url}/docs/assets/redoc.standalone.js`)).text();
    expect(bundle.length).to.be.greaterThan(500_000);
    expect(bundle).to.not.include('cdn.redoc.ly');
  });
});
