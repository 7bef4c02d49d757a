import ipaddr from 'ipaddr.js';
import { badRequest } from '../../core/errors.js';

/**
 * Where a webhook may be sent: an https URL whose host is (or resolves to) a public unicast
 * address, so that a customer cannot make the service POST into its own network (SSRF).
 * `docs/webhooks.md` ("Address safety") explains the rules; `infra/webhooks/https-sender.ts`
 * applies them to every address it resolves and to the one it connected to.
 */

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;
export type Subnet = readonly [IPv4 | IPv6, number];
/** Subnets exempted from the rules (`WEBHOOK_ALLOW_SUBNETS`): local development and tests. */
export type AllowSubnets = readonly Subnet[];

const v4 = (cidr: string) => ipaddr.IPv4.parseCIDR(cidr);
const v6 = (cidr: string) => ipaddr.IPv6.parseCIDR(cidr);

// The first match names the reason, so a narrower range stands before the one containing it.
const V4_RULES: [[IPv4, number], string][] = [
  [v4('0.0.0.0/32'), 'unspecified'],
  [v4('0.0.0.0/8'), '"this network" (0.0.0.0/8)'],
  [v4('10.0.0.0/8'), 'private'],
  [v4('172.16.0.0/12'), 'private'],
  [v4('192.168.0.0/16'), 'private'],
  [v4('100.64.0.0/10'), 'carrier-grade NAT (100.64.0.0/10)'],
  [v4('127.0.0.0/8'), 'loopback'],
  [v4('169.254.0.0/16'), 'link-local'],
  [v4('192.0.0.0/24'), 'reserved for IETF protocol assignments'],
  [v4('192.0.2.0/24'), 'reserved for documentation'],
  [v4('198.51.100.0/24'), 'reserved for documentation'],
  [v4('203.0.113.0/24'), 'reserved for documentation'],
  [v4('198.18.0.0/15'), 'reserved for benchmarking'],
  [v4('192.88.99.0/24'), 'a deprecated 6to4 relay'],
  [v4('224.0.0.0/4'), 'multicast'],
  [v4('255.255.255.255/32'), 'broadcast'],
  [v4('240.0.0.0/4'), 'reserved (240.0.0.0/4)'],
];

const V6_RULES: [[IPv6, number], string][] = [
  [v6('::/128'), 'unspecified'],
  [v6('::1/128'), 'loopback'],
  [v6('fe80::/10'), 'link-local'],
  [v6('fec0::/10'), 'site-local'],
  [v6('fc00::/7'), 'unique-local'],
  [v6('ff00::/8'), 'multicast'],
  [v6('2001:db8::/32'), 'reserved for documentation'],
  [v6('3fff::/20'), 'reserved for documentation'],
  [v6('2001:2::/48'), 'reserved for benchmarking'],
  [v6('100::/64'), 'discard-only'],
  // The operator picks where the IPv4 address sits in a local-use NAT64 prefix, so it cannot be read out.
  [v6('64:ff9b:1::/48'), 'local-use NAT64 (64:ff9b:1::/48)'],
];

const fromParts = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
const last32 = (a: IPv6) => [fromParts(a.parts[6]!, a.parts[7]!)];

/** IPv6 forms that carry an IPv4 address, which is then judged by the IPv4 rules. */
const EMBEDDINGS: [[IPv6, number], string, (a: IPv6) => IPv4[]][] = [
  [v6('::ffff:0:0/96'), 'IPv4-mapped', last32],
  [v6('::ffff:0:0:0/96'), 'IPv4-translated', last32],
  [v6('::/96'), 'IPv4-compatible', last32],
  [v6('64:ff9b::/96'), 'NAT64', last32],
  [v6('2002::/16'), '6to4', (a) => [fromParts(a.parts[1]!, a.parts[2]!)]],
  // Teredo: the server's address, then the client's, stored inverted (RFC 4380).
  [v6('2001::/32'), 'Teredo', (a) => [fromParts(a.parts[2]!, a.parts[3]!), fromParts(~a.parts[6]! & 0xffff, ~a.parts[7]! & 0xffff)]],
];

const GLOBAL_UNICAST = v6('2000::/3');

/**
 * Why a webhook may not go to this address (`address 10.0.0.5 is private`), or null when it may.
 * An address inside an allowed subnet is always accepted; so is an IPv6 form whose embedded IPv4
 * address is. Anything that does not parse as an IP address is refused.
 */
export function addressRefusal(ip: string, allow: AllowSubnets = []): string | null {
  const address = parseAddress(ip);
  if (address === null) return `${JSON.stringify(ip)} is not an IP address`;
  const reason = refusalOf(address, allow);
  return reason === null ? null : `address ${ip} is ${reason}`;
}

/** Four-part decimal IPv4 (what resolvers and sockets report; `10.0.0` is refused) or IPv6. */
function parseAddress(ip: string): IPv4 | IPv6 | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return ipaddr.IPv4.parse(ip);
  // ipaddr.js reads the IPv4-compatible ::a.b.c.d as the IPv4-mapped ::ffff:a.b.c.d.
  const text = ip.replace(/^::(?=\d+\.)/, '::0:');
  return ipaddr.IPv6.isValid(text) ? ipaddr.IPv6.parse(text) : null;
}

export function isForbiddenAddress(ip: string, allow: AllowSubnets = []): boolean {
  return addressRefusal(ip, allow) !== null;
}

function refusalOf(a: IPv4 | IPv6, allow: AllowSubnets): string | null {
  if (allow.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits))) return null;
  return a.kind() === 'ipv4' ? v4Refusal(a as IPv4) : v6Refusal(a as IPv6, allow);
}

function v4Refusal(a: IPv4): string | null {
  const rule = V4_RULES.find(([[net, bits]]) => a.match(net, bits));
  if (rule) return rule[1];
  // Anything else ipaddr.js knows as special (AS112, AMT, ranges added later) is not a receiver either.
  const range = a.range();
  return range === 'unicast' ? null : `special-purpose (${range})`;
}

function v6Refusal(a: IPv6, allow: AllowSubnets): string | null {
  const rule = V6_RULES.find(([[net, bits]]) => a.match(net, bits));
  if (rule) return rule[1];
  const embedding = EMBEDDINGS.find(([[net, bits]]) => a.match(net, bits));
  if (embedding) {
    const [, name, extract] = embedding;
    for (const inner of extract(a)) {
      const reason = refusalOf(inner, allow);
      if (reason !== null) return `${name} ${inner.toString()}, which is ${reason}`;
    }
    return null;
  }
  if (!a.match(GLOBAL_UNICAST)) return 'outside global unicast (2000::/3)';
  const range = a.range();
  return range === 'unicast' ? null : `special-purpose (${range})`;
}

/**
 * `WEBHOOK_ALLOW_SUBNETS`: comma-separated CIDRs (`127.0.0.0/8,::1/128`); blank is none. Throws,
 * naming the entry, on anything else (a bare address too: the prefix length is never guessed).
 */
export function parseAllowSubnets(text: string): Subnet[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      if (!ipaddr.IPv4.isValidCIDRFourPartDecimal(s) && !ipaddr.IPv6.isValidCIDR(s)) {
        throw new Error(`${JSON.stringify(s)} is not a CIDR subnet such as 127.0.0.0/8 or ::1/128`);
      }
      return ipaddr.parseCIDR(s);
    });
}

/** The host of a URL when it is an IP address (without the brackets of an IPv6 one), else null. */
export function ipLiteralHost(url: URL): string | null {
  const host = url.hostname;
  if (host.startsWith('[') && host.endsWith(']')) return host.slice(1, -1);
  // The URL parser has already rewritten every IPv4 spelling (0x7f.1, 2130706433) as four decimals.
  return ipaddr.IPv4.isValidFourPartDecimal(host) ? host : null;
}

/**
 * How a webhook URL must begin, as written: the OpenAPI document declares it as the `url`
 * field's `pattern`. Stricter than the URL parser, which would also take `HTTPS://` or a leading
 * space: the text a client sends is judged as the document says.
 */
export const WEBHOOK_URL_PATTERN = '^https://';

/**
 * A webhook URL as given at registration: `WEBHOOK_URL_PATTERN`, a host (a name without an empty
 * label), no user name or password; a port is fine. A host that is an IP address is judged by `addressRefusal` here
 * already; a name is judged at each delivery, by the addresses it resolves to then. Refusals are
 * 400 `bad_request`.
 */
export function checkWebhookUrl(text: string, allow: AllowSubnets = []): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw badRequest('webhook URL is not an absolute URL (https://host/path)');
  }
  if (url.protocol !== 'https:') throw badRequest(`webhook URL must use https, not ${url.protocol.slice(0, -1)}`);
  if (!new RegExp(WEBHOOK_URL_PATTERN).test(text)) throw badRequest('webhook URL must begin with https:// as written (lower case, nothing before it)');
  if (url.username !== '' || url.password !== '') throw badRequest('webhook URL must not contain a user name or password');
  if (url.hostname === '') throw badRequest('webhook URL has no host');
  const literal = ipLiteralHost(url);
  // The parser lowercases a name, decodes it and drops a default port (the URL is stored as it
  // reads it back), but keeps empty labels: `example.com.` would be a second spelling of a host.
  if (literal === null && url.hostname.split('.').includes('')) {
    throw badRequest(`webhook URL host ${JSON.stringify(url.hostname)} has an empty label (a trailing or doubled dot): write it as ${JSON.stringify(url.hostname.split('.').filter(Boolean).join('.'))}`);
  }
  const refusal = literal === null ? null : addressRefusal(literal, allow);
  if (refusal !== null) throw badRequest(`webhook URL refused: ${refusal}`);
  return url;
}
