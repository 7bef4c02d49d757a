import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { addressRefusal } from '../../src/domain/webhooks/address-policy.js';

describe('Webhook configuration', () => {
  describe('WEBHOOK_ALLOW_SUBNETS', () => {
    it('exempts nothing when unset or blank', () => {
      expect(loadConfig({}).webhookAllowSubnets).to.deep.equal([]);
      expect(loadConfig({ WEBHOOK_ALLOW_SUBNETS: ' ' }).webhookAllowSubnets).to.deep.equal([]);
    });

    it('takes comma-separated CIDRs, IPv4 and IPv6', () => {
      const allow = loadConfig({ WEBHOOK_ALLOW_SUBNETS: '127.0.0.0/8, ::1/128' }).webhookAllowSubnets;
      expect(allow).to.have.length(2);
      expect(addressRefusal('127.0.0.1', allow)).to.equal(null);
      expect(addressRefusal('::1', allow)).to.equal(null);
      expect(addressRefusal('10.0.0.1', allow)).to.equal('address 10.0.0.1 is private');
    });

    it('stops the process on an entry that is not a CIDR, naming the variable and the entry', () => {
      for (const text of ['127.0.0.1', '10.0.0.0/8,10.0.0.0/40', 'localhost']) {
        expect(() => loadConfig({ WEBHOOK_ALLOW_SUBNETS: text }), text).to.throw(ConfigError, /WEBHOOK_ALLOW_SUBNETS: ".+" is not a CIDR subnet/);
      }
    });
  });

  describe('WEBHOOK_CA_FILE', () => {
    let dir: string;
    before(() => (dir = mkdtempSync(join(tmpdir(), 'scores-webhook-config-'))));
    after(() => rmSync(dir, { recursive: true, force: true }));

    it('is null when unset, and the absolute path of a readable PEM file otherwise', async () => {
      expect(loadConfig({}).webhookCaFile).to.equal(null);
      const file = join(dir, 'ca.pem');
      writeFileSync(file, (await generate([{ name: 'commonName', value: 'test CA' }], { keySize: 2048, algorithm: 'sha256' })).cert);
      expect(loadConfig({ WEBHOOK_CA_FILE: file }).webhookCaFile).to.equal(file);
    });

    it('stops the process when the file is missing or holds no certificate, naming the variable and the file', () => {
      const missing = join(dir, 'missing.pem');
      expect(() => loadConfig({ WEBHOOK_CA_FILE: missing })).to.throw(ConfigError, `WEBHOOK_CA_FILE: cannot read ${missing} (ENOENT)`);
      const junk = join(dir, 'junk.pem');
      writeFileSync(junk, 'hello\n');
      expect(() => loadConfig({ WEBHOOK_CA_FILE: junk })).to.throw(ConfigError, `WEBHOOK_CA_FILE: ${junk} holds no PEM certificate`);
      expect(() => loadConfig({ WEBHOOK_CA_FILE: dir })).to.throw(ConfigError, /WEBHOOK_CA_FILE: cannot read .* \(EISDIR\)/);
    });
  });
});
