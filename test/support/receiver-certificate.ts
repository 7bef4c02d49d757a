import { writeFileSync } from 'node:fs';
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
