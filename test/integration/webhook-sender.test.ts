import { expect } from 'chai';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveryResult, WebhookRequest } from '../../src/core/webhook-sender.port.js';
import { parseAllowSubnets } from '../../src/domain/webhooks/address-policy.js';
import { HttpsWebhookSender, readCaFile, type HttpsWebhookSenderOptions } from '../../infra/webhooks/https-sender.js';
import { until } from '../support/processes.js';
import { receiverCertificate } from '../support/receiver-certificate.js';

/** Every receiver body carries it; no result may. */
const CANARY = 'receiver-secret-7f3a';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;

describe('Webhook sender (HTTPS)', () => {
  let dir: string;
  let caFile: string;
  let server: Server;
  let port: number;
  let received: Received[];
  let behaviour: Behaviour;

  const request = (path = '/hooks/scores?team=7', host = '127.0.0.1'): WebhookRequest => ({
    url: `https://${host}:${port}${path}`,
    body: JSON.stringify({ type: 'scores.published', data: { date: '2024-04-10', note: 'ünïcödé' } }),
    headers: { 'webhook-id': 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W', 'webhook-timestamp': '1712739600', 'webhook-signature': 'v1,abc=' },
  });
  const sender = (options: HttpsWebhookSenderOptions = {}) =>
    new HttpsWebhookSender({ allow: parseAllowSubnets('127.0.0.0/8'), caFile, timeoutMs: 5000, ...options });
  const expectNoReceiverText = (result: DeliveryResult) => expect(JSON.stringify(result)).not.to.include(CANARY);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'scores-webhook-'));
    const pems = await receiverCertificate(dir);
    caFile = pems.caFile;
    server = createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        behaviour(req, res);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  beforeEach(() => {
    received = [];
    behaviour = (_req, res) => res.writeHead(200, { 'Content-Type': 'text/plain' }).end(CANARY);
  });

  afterEach(() => server.closeAllConnections());

  after(() => {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('When the receiver answers 200', () => {
    it('delivers the exact body and headers once, and succeeds', async () => {
      const sent = request();
      const result = await sender().send(sent);
      expect(result).to.deep.equal({ ok: true, status_code: 200, error: null, delivered_to: '127.0.0.1' });
      expect(received).to.have.length(1);
      const [got] = received;
      expect(got!.method).to.equal('POST');
      expect(got!.url).to.equal('/hooks/scores?team=7');
      expect(got!.body).to.equal(sent.body);
      expect(got!.headers).to.include({
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(sent.body)),
        'user-agent': 'Scores-Webhooks/1',
        host: `127.0.0.1:${port}`,
        'webhook-id': sent.headers['webhook-id'],
        'webhook-timestamp': sent.headers['webhook-timestamp'],
        'webhook-signature': sent.headers['webhook-signature'],
      });
      expectNoReceiverText(result);
    });

    it('keeps its own Content-Type over a caller header of any case', async () => {
      const sent = request();
      await sender({ userAgent: 'Probe/2' }).send({ ...sent, headers: { ...sent.headers, 'content-type': 'text/plain' } });
      expect(received[0]!.headers['content-type']).to.equal('application/json');
      expect(received[0]!.headers['user-agent']).to.equal('Probe/2');
    });
  });

  describe('When the receiver answers 500', () => {
    it('fails the attempt with the status and our words, never the receiver body', async () => {
      behaviour = (_req, res) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${CANARY}: stack trace at db.query`);
      const result = await sender().send(request());
      expect(result).to.deep.equal({ ok: false, status_code: 500, error: 'receiver answered 500', delivered_to: '127.0.0.1' });
      expectNoReceiverText(result);
    });
  });

  describe('When the receiver answers 410 Gone', () => {
    it('fails the attempt with the status, for the caller to act on', async () => {
      behaviour = (_req, res) => res.writeHead(410).end(CANARY);
      const result = await sender().send(request());
      expect(result).to.deep.equal({ ok: false, status_code: 410, error: 'receiver answered 410', delivered_to: '127.0.0.1' });
    });
  });

  describe('When the receiver redirects', () => {
    it('fails the attempt and does not follow it', async () => {
      behaviour = (req, res) => {
        if (req.url === '/moved') res.writeHead(200).end();
        else res.writeHead(302, { Location: `https://127.0.0.1:${port}/moved` }).end(CANARY);
      };
      const result = await sender().send(request());
      expect(result).to.deep.equal({ ok: false, status_code: 302, error: 'redirect (302) refused', delivered_to: '127.0.0.1' });
      await new Promise((r) => setTimeout(r, 100));
      expect(received.map((r) => r.url)).to.deep.equal(['/hooks/scores?team=7']);
    });
  });

  describe('When the receiver never answers', () => {
    it('gives up after the time-out, with no status', async () => {
      behaviour = () => {};
      const result = await sender({ timeoutMs: 300 }).send(request());
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'timed out after 0.3 s', delivered_to: '127.0.0.1' });
    });
  });

  describe('When the receiver streams a body without end', () => {
    it('stops reading at the cap, closes the connection and goes by the status', async () => {
      let written = 0;
      let closed = false;
      behaviour = (_req, res) => {
        res.writeHead(503, { 'Content-Type': 'text/plain' });
        res.on('close', () => (closed = true));
        const chunk = Buffer.from(`${CANARY} `.repeat(4096));
        const pump = () => {
          while (!closed && res.write(chunk)) written += chunk.length;
          if (!closed) res.once('drain', pump);
        };
        pump();
      };
      // No time-out to end the read: an answer comes only if the sender stops at the cap.
      const result = await sender({ timeoutMs: 600_000, maxResponseBytes: 4096 }).send(request());
      expect(result).to.deep.equal({ ok: false, status_code: 503, error: 'receiver answered 503', delivered_to: '127.0.0.1' });
      await until(() => closed, 60_000);
      expect(written).to.be.below(64 * 1024 * 1024);
    });

    it('still succeeds on a 200 whose body never ends', async () => {
      behaviour = (_req, res) => {
        res.writeHead(200);
        res.write(Buffer.alloc(64 * 1024, 'x'));
      };
      const result = await sender({ timeoutMs: 5000 }).send(request());
      expect(result).to.deep.equal({ ok: true, status_code: 200, error: null, delivered_to: '127.0.0.1' });
    });
  });

  describe("When the receiver's certificate is not trusted", () => {
    it('fails the attempt before anything is sent', async () => {
      const result = await sender({ caFile: null }).send(request());
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'TLS: certificate not trusted', delivered_to: '127.0.0.1' });
      expect(received).to.have.length(0);
    });
  });

  describe('When the URL names a host', () => {
    it('connects to the address it checked and verifies the certificate against the name', async () => {
      const asked: string[] = [];
      const resolve = async (host: string) => (asked.push(host), ['127.0.0.1']);
      const result = await sender({ resolve }).send(request('/in', 'localhost'));
      expect(result).to.deep.equal({ ok: true, status_code: 200, error: null, delivered_to: '127.0.0.1' });
      expect(asked, 'one lookup, by the sender').to.deep.equal(['localhost']);
      expect(received[0]!.headers.host).to.equal(`localhost:${port}`);
    });

    it('fails when the certificate does not name that host, although the address is the same', async () => {
      const result = await sender({ resolve: async () => ['127.0.0.1'] }).send(request('/in', 'hooks.example.com'));
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'TLS: certificate does not name the host', delivered_to: '127.0.0.1' });
      expect(received).to.have.length(0);
    });

    it('refuses when any of its addresses is forbidden, sending nothing', async () => {
      const result = await sender({ resolve: async () => ['127.0.0.1', '10.0.0.5'] }).send(request('/in', 'localhost'));
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'address 10.0.0.5 is private', delivered_to: '10.0.0.5' });
      expect(received).to.have.length(0);
    });

    it('refuses a name the system resolver maps to loopback (localhost)', async () => {
      const result = await sender({ allow: [] }).send(request('/in', 'localhost'));
      expect(result.ok).to.equal(false);
      expect(result.status_code).to.equal(null);
      expect(result.error).to.match(/^address (127\.0\.0\.1|::1) is loopback$/);
      expect(result.delivered_to).to.match(/^(127\.0\.0\.1|::1)$/);
      expect(received).to.have.length(0);
    });

    it('fails with our words when the name does not resolve', async () => {
      const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
      const result = await sender({ resolve: () => Promise.reject(notFound) }).send(request('/in', 'nowhere.invalid'));
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'DNS: no such host', delivered_to: 'nowhere.invalid' });
    });

    it('judges the host at registration as a delivery would: a forbidden address is refused, a name that does not resolve is not', async () => {
      const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
      expect(await sender({ resolve: async () => ['93.184.215.14', '10.0.0.5'] }).refusal('https://hooks.example.com/in')).to.equal('address 10.0.0.5 is private');
      expect(await sender({ resolve: async () => ['93.184.215.14'] }).refusal('https://hooks.example.com/in')).to.equal(null);
      expect(await sender({ resolve: () => Promise.reject(notFound) }).refusal('https://nowhere.invalid/in')).to.equal(null);
      expect(await sender({ allow: [] }).refusal('https://localhost/in')).to.match(/^address (127\.0\.0\.1|::1) is loopback$/);
      expect(received).to.have.length(0);
    });

    it('counts a resolver that never answers against the time-out', async () => {
      const result = await sender({ timeoutMs: 200, resolve: () => new Promise(() => {}) }).send(request('/in', 'localhost'));
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'timed out after 0.2 s', delivered_to: 'localhost' });
    });
  });

  describe('When the address is loopback', () => {
    it('refuses it without the allowed subnet, sending nothing', async () => {
      const result = await sender({ allow: [] }).send(request());
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'webhook URL refused: address 127.0.0.1 is loopback', delivered_to: '127.0.0.1' });
      expect(received).to.have.length(0);
    });

    it('delivers to it with 127.0.0.0/8 exempted', async () => {
      const result = await sender({ allow: parseAllowSubnets('127.0.0.0/8') }).send(request());
      expect(result.ok).to.equal(true);
      expect(received).to.have.length(1);
    });
  });

  describe('When the address the socket reached no longer passes the policy', () => {
    it('closes the connection before anything is sent', async () => {
      // An exemption that holds for the first check (the resolved address) and not for the next (the socket's).
      let checks = 0;
      const subnets = parseAllowSubnets('127.0.0.0/8');
      const allow = new Proxy(subnets, {
        get: (target, key, receiver): unknown =>
          key === 'some' ? (...args: Parameters<typeof subnets.some>) => checks++ === 0 && target.some(...args) : Reflect.get(target, key, receiver),
      });
      const result = await sender({ allow, resolve: async () => ['127.0.0.1'] }).send(request('/in', 'localhost'));
      expect(checks).to.equal(2);
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'address 127.0.0.1 is loopback', delivered_to: '127.0.0.1' });
      await new Promise((r) => setTimeout(r, 100));
      expect(received).to.have.length(0);
    });
  });

  describe('When the URL is not an https URL', () => {
    it('refuses it without connecting', async () => {
      const result = await sender().send({ ...request(), url: `http://127.0.0.1:${port}/in` });
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'webhook URL must use https, not http', delivered_to: '127.0.0.1' });
      const garbage = await sender().send({ ...request(), url: 'not a url' });
      expect(garbage).to.deep.equal({ ok: false, status_code: null, error: 'webhook URL is not an absolute URL (https://host/path)', delivered_to: '' });
      expect(received).to.have.length(0);
    });
  });

  describe('When nothing listens on the port', () => {
    it('fails the attempt as refused', async () => {
      const probe = createTcpServer().listen(0, '127.0.0.1');
      await once(probe, 'listening');
      const closedPort = (probe.address() as AddressInfo).port;
      await new Promise((r) => probe.close(r));
      const result = await sender().send({ ...request(), url: `https://127.0.0.1:${closedPort}/in` });
      expect(result).to.deep.equal({ ok: false, status_code: null, error: 'connection refused', delivered_to: '127.0.0.1' });
    });
  });

  describe('The CA file (WEBHOOK_CA_FILE)', () => {
    it('is read as its PEM certificates, and refused naming the file when it holds none or is missing', () => {
      expect(readCaFile(caFile)).to.have.length(1);
      const empty = join(dir, 'empty.pem');
      writeFileSync(empty, 'not a certificate\n');
      expect(() => readCaFile(empty)).to.throw(`${empty} holds no PEM certificate`);
      const broken = join(dir, 'broken.pem');
      writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
      expect(() => readCaFile(broken)).to.throw(`${broken}: certificate 1 does not parse`);
      expect(() => readCaFile(join(dir, 'missing.pem'))).to.throw(/cannot read .*missing\.pem \(ENOENT\)/);
    });
  });
});
