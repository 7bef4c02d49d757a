import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { generate } from 'selfsigned';

export interface ReceiverCertificate {
  key: string;
  cert: string;
  /** The certificate written as a PEM file in `dir`: what `WEBHOOK_CA_FILE` names to trust it. */
  caFile: string;
}

/**
 * A self-signed certificate for a local HTTPS webhook receiver, valid for `name` and `ips`
 * (by default `localhost`, 127.0.0.1 and ::1), and its own CA (so the service trusts it through
 * `WEBHOOK_CA_FILE`).
 */
export async function receiverCertificate(dir: string, name = 'localhost', ips: readonly string[] = ['127.0.0.1', '::1']): Promise<ReceiverCertificate> {
  const pems = await generate([{ name: 'commonName', value: name }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, keyCertSign: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: name }, ...ips.map((ip) => ({ type: 7 as const, ip }))] },
    ],
  });
  const caFile = join(dir, 'receiver-ca.pem');
  writeFileSync(caFile, pems.cert);
  return { key: pems.private, cert: pems.cert, caFile };
}

/** A delivery a local receiver took: its headers and raw body. */
export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** The path it was posted to (the switchable receiver's). */
  path?: string;
}

export interface HttpsReceiver {
  /** Every delivery so far, in arrival order (the array is appended to in place). */
  received: ReceivedDelivery[];
  port: number;
  /** Its certificate's CA file, for `WEBHOOK_CA_FILE`. */
  caFile: string;
  close(): Promise<void>;
}

/** A local HTTPS webhook receiver on 127.0.0.1 that answers every delivery 204 and keeps it. */
export async function startHttpsReceiver(dir: string): Promise<HttpsReceiver> {
  const pems = await receiverCertificate(dir);
  const received: ReceivedDelivery[] = [];
  const server = createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    received,
    port: (server.address() as AddressInfo).port,
    caFile: pems.caFile,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A receiver that can be stopped and started again on its port, and told what status to answer. */
export interface SwitchableReceiver extends HttpsReceiver {
  /** The status every delivery is answered with (204 at first)... */
  status: number;
  /** ...but those to a path named here (`/gone`: 410). */
  answers: Record<string, number>;
  /** Stops listening (open connections closed): deliveries fail to connect. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

export async function startSwitchableReceiver(dir: string): Promise<SwitchableReceiver> {
  const pems = await receiverCertificate(dir);
  const received: ReceivedDelivery[] = [];
  const self = { status: 204, answers: {} } as unknown as SwitchableReceiver;
  const server = createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' });
      res.writeHead(self.answers[req.url ?? ''] ?? self.status).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return Object.assign(self, {
    received,
    port,
    caFile: pems.caFile,
    stop,
    close: stop,
    async start() {
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    },
  });
}
