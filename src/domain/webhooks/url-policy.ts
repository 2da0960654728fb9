import { BlockList, isIP } from 'node:net';
import { invalid } from '../errors.js';
import type { HostResolver } from './ports.js';

/**
 * Where webhooks may not go (SSRF): the gateway's own machine and networks a request from it could
 * reach but the internet cannot. IPv6 addresses of a translation prefix (IPv4-mapped, IPv4-translated,
 * NAT64) are judged by the IPv4 address they carry.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // RFC 1918
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata lives here)
  ['172.16.0.0', 12], // RFC 1918
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // RFC 1918
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (RFC 4193)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['100::', 64], // discard-only
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/**
 * The IPv4 address an IPv6 address carries, in its last 32 bits, else null: IPv4-mapped
 * (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96, SIIT), NAT64 (64:ff9b::/96, and the local-use
 * 64:ff9b:1::/48, RFC 8215, whatever its subnet bits), and the deprecated IPv4-compatible ::/96. On a
 * network that translates them, a request to such an address reaches that IPv4 address.
 */
function embeddedIpv4(address: string): string | null {
  const words = expandIpv6(address);
  if (!words) return null;
  const zero = (from: number, to: number) => words.slice(from, to).every((w) => w === 0);
  const mapped = zero(0, 5) && words[5] === 0xffff;
  const translated = zero(0, 4) && words[4] === 0xffff && words[5] === 0;
  const nat64 = words[0] === 0x64 && words[1] === 0xff9b && zero(2, 6);
  const localNat64 = words[0] === 0x64 && words[1] === 0xff9b && words[2] === 1;
  const compat = zero(0, 6) && (words[6] !== 0 || words[7] > 1);
  if (!mapped && !translated && !nat64 && !localNat64 && !compat) return null;
  return [words[6] >> 8, words[6] & 0xff, words[7] >> 8, words[7] & 0xff].join('.');
}

/** Eight 16-bit words of an IPv6 address (a trailing dotted IPv4 part included), or null. */
function expandIpv6(address: string): number[] | null {
  let text = address.toLowerCase().split('%')[0];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const b = dotted[1].split('.').map(Number);
    text = `${text.slice(0, -dotted[1].length)}${((b[0] << 8) | b[1]).toString(16)}:${((b[2] << 8) | b[3]).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail === null ? 0 : 8 - h.length - t.length;
  const words = [...h, ...Array<string>(Math.max(0, fill)).fill('0'), ...t].map((w) => parseInt(w || '0', 16));
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null;
}

/** True when `address` (an IP literal) is one a webhook may be sent to. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIpv4(address);
  if (v4 !== null) return !BLOCKED.check(v4, 'ipv4');
  return !BLOCKED.check(address, 'ipv6');
}

/** A URL that passed the static checks: http(s), a host, no credentials. */
export function parseWebhookUrl(value: unknown): URL {
  if (typeof value !== 'string' || value.trim() === '') throw invalid('url', 'url must be a non-empty string');
  if (value.length > 2000) throw invalid('url', 'url must be at most 2000 characters');
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw invalid('url', 'url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('url', 'url must be an http or https URL');
  if (url.username || url.password) throw invalid('url', 'url must not contain credentials');
  if (!url.hostname) throw invalid('url', 'url must name a host');
  return url;
}

/** The URL's host as an address literal (brackets of IPv6 removed), or null for a name. */
export function hostLiteral(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) ? host : null;
}

/**
 * The addresses a webhook to `url` may connect to: every address its host resolves to, all public
 * (one private address refuses the URL: which one a client connects to is not ours to choose), unless
 * private addresses are allowed. Throws AppError invalid_request (400) naming the rule.
 */
export async function allowedAddresses(url: URL, resolve: HostResolver, allowPrivate: boolean): Promise<string[]> {
  const literal = hostLiteral(url);
  let addresses: string[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = await resolve(url.hostname);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) throw invalid('url', `url host ${url.hostname} does not resolve`);
  }
  if (!allowPrivate) {
    const refused = addresses.find((a) => !isPublicAddress(a));
    if (refused !== undefined) {
      throw invalid('url', `url must not point to a loopback, private, link-local, multicast or unspecified address (${url.hostname} is ${refused})`);
    }
  }
  return addresses;
}
