import { expect } from 'chai';
import { AppError } from '../../src/core/errors.js';
import { WEBHOOK_URL_PATTERN, addressRefusal, checkWebhookUrl, isForbiddenAddress, parseAllowSubnets } from '../../src/domain/webhooks/address-policy.js';

/** Each address with the words its refusal must contain. */
function expectRefused(cases: [string, string][], allow = parseAllowSubnets('')): void {
  for (const [ip, reason] of cases) {
    const refusal = addressRefusal(ip, allow);
    expect(refusal, ip).to.be.a('string').and.include(`address ${ip} is`).and.include(reason);
    expect(isForbiddenAddress(ip, allow), ip).to.equal(true);
  }
}

function expectAllowed(ips: string[], allow = parseAllowSubnets('')): void {
  for (const ip of ips) {
    expect(addressRefusal(ip, allow), ip).to.equal(null);
    expect(isForbiddenAddress(ip, allow), ip).to.equal(false);
  }
}

function refusalOfUrl(text: string, allow = parseAllowSubnets('')): AppError {
  try {
    checkWebhookUrl(text, allow);
  } catch (err) {
    expect(err).to.be.instanceOf(AppError);
    return err as AppError;
  }
  expect.fail(`${text} was accepted`);
}

describe('Webhook address policy', () => {
  describe('An IPv4 address', () => {
    it('is refused when it is not a public unicast address, saying which kind it is', () => {
      expectRefused([
        ['127.0.0.1', 'loopback'],
        ['127.255.255.254', 'loopback'],
        ['10.0.0.5', 'private'],
        ['172.16.0.1', 'private'],
        ['172.31.255.255', 'private'],
        ['192.168.1.1', 'private'],
        ['169.254.169.254', 'link-local'],
        ['100.64.0.1', 'carrier-grade NAT'],
        ['100.127.255.255', 'carrier-grade NAT'],
        ['224.0.0.1', 'multicast'],
        ['239.255.255.250', 'multicast'],
        ['255.255.255.255', 'broadcast'],
        ['192.0.2.10', 'documentation'],
        ['198.51.100.7', 'documentation'],
        ['203.0.113.200', 'documentation'],
        ['0.0.0.0', 'unspecified'],
        ['0.1.2.3', 'this network'],
        ['198.18.0.1', 'benchmarking'],
        ['198.19.255.255', 'benchmarking'],
        ['240.0.0.1', 'reserved'],
        ['192.0.0.8', 'IETF protocol assignments'],
        ['192.88.99.1', '6to4 relay'],
      ]);
    });

    it('is refused when ipaddr.js knows it as special although no rule names it (AS112)', () => {
      expectRefused([['192.175.48.1', 'special-purpose (as112)']]);
    });

    it('is allowed when it is public, including the neighbours of the forbidden ranges', () => {
      expectAllowed(['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.15.255.255', '172.32.0.1', '100.63.255.255', '100.128.0.1', '198.17.255.255', '198.20.0.1', '223.255.255.255', '11.0.0.1']);
    });
  });

  describe('An IPv6 address', () => {
    it('is refused when it is not global unicast, saying which kind it is', () => {
      expectRefused([
        ['::1', 'loopback'],
        ['::', 'unspecified'],
        ['fe80::1', 'link-local'],
        ['fe80::1%eth0', 'link-local'],
        ['fec0::1', 'site-local'],
        ['fc00::1', 'unique-local'],
        ['fd12:3456:789a::1', 'unique-local'],
        ['ff02::1', 'multicast'],
        ['2001:db8::1', 'documentation'],
        ['2001:2::1', 'benchmarking'],
        ['100::1', 'discard-only'],
        ['64:ff9b:1::a00:5', 'local-use NAT64'],
        ['4000::1', 'outside global unicast'],
        ['2001:20::1', 'special-purpose (orchid2)'],
      ]);
    });

    it('is allowed when it is global unicast', () => {
      expectAllowed(['2606:4700:4700::1111', '2a00:1450:4001:81c::200e', '2001:4860:4860::8888']);
    });
  });

  describe('An IPv6 address that carries an IPv4 address', () => {
    it('is judged by the IPv4 address inside it, naming both', () => {
      expectRefused([
        ['::ffff:127.0.0.1', 'IPv4-mapped 127.0.0.1, which is loopback'],
        ['::ffff:7f00:1', 'IPv4-mapped 127.0.0.1, which is loopback'],
        ['::ffff:10.0.0.5', 'IPv4-mapped 10.0.0.5, which is private'],
        ['::ffff:169.254.169.254', 'which is link-local'],
        ['::127.0.0.1', 'IPv4-compatible 127.0.0.1, which is loopback'],
        ['::7f00:1', 'IPv4-compatible 127.0.0.1, which is loopback'],
        ['::192.168.0.1', 'IPv4-compatible 192.168.0.1, which is private'],
        ['::ffff:0:10.1.2.3', 'IPv4-translated 10.1.2.3, which is private'],
        ['64:ff9b::10.0.0.5', 'NAT64 10.0.0.5, which is private'],
        ['64:ff9b::7f00:1', 'NAT64 127.0.0.1, which is loopback'],
        ['2002:7f00:1::1', '6to4 127.0.0.1, which is loopback'],
        ['2002:c0a8:101::1', '6to4 192.168.1.1, which is private'],
        // Teredo: server 10.0.0.1; client 8.8.8.8 stored inverted.
        ['2001:0:a00:1::f7f7:f7f7', 'Teredo 10.0.0.1, which is private'],
        // Teredo: server 8.8.8.8; client 127.0.0.1 stored inverted (80ff:fffe).
        ['2001:0:808:808::80ff:fffe', 'Teredo 127.0.0.1, which is loopback'],
      ]);
    });

    it('is allowed when the IPv4 address inside it is public', () => {
      expectAllowed(['::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1', '2001:0:808:808::f7f7:f7f7']);
    });
  });

  it('refuses what is not an IP address at all', () => {
    for (const text of ['', 'localhost', '10.0.0', '1.2.3.4.5', ':::1']) {
      expect(addressRefusal(text), text).to.match(/is not an IP address/);
    }
  });

  describe('WEBHOOK_ALLOW_SUBNETS', () => {
    it('exempts its subnets from every rule, and nothing outside them', () => {
      const allow = parseAllowSubnets(' 127.0.0.0/8 , fd00::/8,10.1.0.0/16');
      expectAllowed(['127.0.0.1', '127.1.2.3', 'fd00::1', '10.1.200.3'], allow);
      expectRefused(
        [
          ['10.2.0.1', 'private'],
          ['::1', 'loopback'],
          ['fc00::1', 'unique-local'],
        ],
        allow,
      );
    });

    it('exempts an embedded IPv4 address inside an exempted subnet', () => {
      const allow = parseAllowSubnets('127.0.0.0/8');
      expectAllowed(['::ffff:127.0.0.1', '64:ff9b::127.0.0.1'], allow);
    });

    it('is empty when blank', () => {
      expect(parseAllowSubnets('')).to.deep.equal([]);
      expect(parseAllowSubnets(' , ')).to.deep.equal([]);
    });

    it('refuses an entry that is not a CIDR subnet, naming it', () => {
      for (const text of ['127.0.0.1', '127.0.0.0/33', '::1/129', 'localhost/8', '10.0.0.0/8,nonsense', '0x7f.1/8']) {
        expect(() => parseAllowSubnets(text), text).to.throw(/is not a CIDR subnet/);
      }
      expect(() => parseAllowSubnets('10.0.0.0/8,nonsense')).to.throw(/"nonsense"/);
    });
  });

  describe('A webhook URL', () => {
    it('is accepted with https, a host name, a port, a path and a query', () => {
      const url = checkWebhookUrl('https://hooks.example.com:8443/in/scores?team=7');
      expect(url.hostname).to.equal('hooks.example.com');
      expect(url.port).to.equal('8443');
      expect(url.pathname + url.search).to.equal('/in/scores?team=7');
      expect(checkWebhookUrl('https://Hooks.Example.com/').href).to.equal('https://hooks.example.com/');
    });

    it('is refused unless it begins with https:// as written, the pattern the OpenAPI document declares', () => {
      for (const text of ['HTTPS://hooks.example.com/', 'Https://hooks.example.com/', ' https://hooks.example.com/', '\thttps://hooks.example.com/']) {
        const err = refusalOfUrl(text);
        expect([err.code, err.status], JSON.stringify(text)).to.deep.equal(['bad_request', 400]);
        expect(err.message, JSON.stringify(text)).to.include('must begin with https://');
        expect(new RegExp(WEBHOOK_URL_PATTERN).test(text), JSON.stringify(text)).to.equal(false);
      }
    });

    it('is refused as a bad request unless it uses https', () => {
      for (const text of ['http://hooks.example.com/', 'ftp://hooks.example.com/', 'file:///etc/passwd', 'wss://hooks.example.com/']) {
        const err = refusalOfUrl(text);
        expect(err.code, text).to.equal('bad_request');
        expect(err.status).to.equal(400);
        expect(err.detail, text).to.match(/^webhook URL must use https, not \w+$/);
      }
    });

    it('is refused when it carries a user name or password', () => {
      for (const text of ['https://user:secret@hooks.example.com/', 'https://user@hooks.example.com/', 'https://:secret@hooks.example.com/']) {
        expect(refusalOfUrl(text).detail, text).to.equal('webhook URL must not contain a user name or password');
      }
    });

    it('is refused when its host name has an empty label (a trailing or doubled dot), naming the canonical spelling', () => {
      for (const [text, canonical] of [
        ['https://hooks.example.com./in', 'hooks.example.com'],
        ['https://hooks.example.com../in', 'hooks.example.com'],
        ['https://hooks..example.com/in', 'hooks.example.com'],
        ['https://.hooks.example.com/in', 'hooks.example.com'],
      ] as const) {
        const refusal = refusalOfUrl(text);
        expect(refusal.code, text).to.equal('bad_request');
        expect(refusal.detail, text).to.contain('empty label').and.contain(`"${canonical}"`);
      }
      // An IPv4 address with a trailing dot is read as the address itself (and judged as one).
      expect(checkWebhookUrl('https://93.184.216.34./in').href).to.equal('https://93.184.216.34/in');
      expect(checkWebhookUrl('https://HOOKS.Example.com:443/in').href).to.equal('https://hooks.example.com/in');
    });

    it('is refused when it has no host or is not a URL', () => {
      for (const text of ['https://', 'https://:443/', 'hooks.example.com/in', '/in/scores', '', 'https://exa mple.com/']) {
        expect(refusalOfUrl(text).detail, text).to.equal('webhook URL is not an absolute URL (https://host/path)');
      }
    });

    it('is refused when its host is a forbidden IP address, however the address is spelled', () => {
      for (const [text, detail] of [
        ['https://127.0.0.1/', 'webhook URL refused: address 127.0.0.1 is loopback'],
        ['https://2130706433/', 'webhook URL refused: address 127.0.0.1 is loopback'],
        ['https://0x7f.1:8443/', 'webhook URL refused: address 127.0.0.1 is loopback'],
        ['https://10.0.0.5/hook', 'webhook URL refused: address 10.0.0.5 is private'],
        ['https://[::1]/', 'webhook URL refused: address ::1 is loopback'],
        ['https://[::ffff:169.254.169.254]/', 'webhook URL refused: address ::ffff:a9fe:a9fe is IPv4-mapped 169.254.169.254, which is link-local'],
        ['https://[fd00::1]:8443/', 'webhook URL refused: address fd00::1 is unique-local'],
      ]) {
        expect(refusalOfUrl(text!).detail, text).to.equal(detail);
      }
    });

    it('is accepted with a public IP address host, or an exempted one', () => {
      expect(checkWebhookUrl('https://93.184.216.34/hook').hostname).to.equal('93.184.216.34');
      expect(checkWebhookUrl('https://[2606:4700:4700::1111]/hook').hostname).to.equal('[2606:4700:4700::1111]');
      expect(checkWebhookUrl('https://127.0.0.1:8443/', parseAllowSubnets('127.0.0.0/8')).port).to.equal('8443');
    });

    it('is accepted with a host name whatever it resolves to: names are judged at each delivery', () => {
      expect(checkWebhookUrl('https://localhost:8443/').hostname).to.equal('localhost');
    });
  });
});
