import { describe, expect, it } from 'vitest';
import { isAppError } from '../../src/domain/errors.js';
import { allowedAddresses, isPublicAddress, parseWebhookUrl } from '../../src/domain/webhooks/url-policy.js';

describe('isPublicAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'RFC 1918'],
    ['172.16.0.1', 'RFC 1918'],
    ['172.31.255.255', 'RFC 1918'],
    ['192.168.1.1', 'RFC 1918'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fc00::1', 'unique local'],
    ['fd12:3456:789a::1', 'unique local'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'IPv6 link-local with a zone'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex form'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped link-local'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated loopback (::ffff:0:0/96)'],
    ['::ffff:0:7f00:1', 'IPv4-translated loopback, hex form'],
    ['::ffff:0:a9fe:a9fe', 'IPv4-translated link-local'],
    ['64:ff9b::10.0.0.1', 'NAT64 of a private address'],
    ['64:ff9b:1::7f00:1', 'local-use NAT64 (64:ff9b:1::/48) of loopback'],
    ['64:ff9b:1:abcd::192.168.0.1', 'local-use NAT64 of a private address, with a subnet'],
    ['64:ff9b:1:ffff:ffff:ffff:a9fe:a9fe', 'local-use NAT64 of link-local, the /48 filled'],
    ['not an address', 'not an IP'],
  ])('refuses %s (%s)', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([['93.184.215.14'], ['8.8.8.8'], ['172.32.0.1'], ['100.128.0.1'], ['2606:4700:4700::1111'], ['::ffff:8.8.8.8'], ['64:ff9b::808:808'], ['::ffff:0:8.8.8.8'], ['64:ff9b:1::808:808']])('allows %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('allowedAddresses', () => {
  const resolver = (answers: Record<string, string[]>) => async (host: string) => answers[host] ?? [];

  async function refusal(url: string, answers: Record<string, string[]> = {}): Promise<string> {
    try {
      await allowedAddresses(parseWebhookUrl(url), resolver(answers), false);
    } catch (err) {
      if (isAppError(err)) return `${err.code}: ${err.message}`;
      throw err;
    }
    return 'allowed';
  }

  it('refuses URLs whose literal address carries a refused IPv4 address through a translation prefix', async () => {
    for (const url of ['http://[::ffff:0:127.0.0.1]/', 'http://[64:ff9b:1::7f00:1]/', 'https://[64:ff9b::a9fe:a9fe]/hook']) {
      expect(await refusal(url), url).toMatch(/^invalid_request: url must not point to a loopback, private, link-local/);
    }
  });

  it('refuses a name that resolves to a translated refused address', async () => {
    expect(await refusal('https://nat.example.test/x', { 'nat.example.test': ['64:ff9b:1::a00:1'] })).toMatch(/^invalid_request: url must not point to/);
  });

  it('resolves names and refuses one that resolves to loopback', async () => {
    expect(await refusal('https://hooks.example.test/x', { 'hooks.example.test': ['127.0.0.1'] })).toMatch(/^invalid_request: url must not point to a loopback/);
  });

  it('refuses a name when any of its addresses is private', async () => {
    expect(await refusal('https://mixed.example.test/', { 'mixed.example.test': ['93.184.215.14', '10.0.0.5'] })).toMatch(/10\.0\.0\.5/);
    expect(await refusal('https://public.example.test/', { 'public.example.test': ['93.184.215.14', '2606:4700:4700::1111'] })).toBe('allowed');
  });

  it('refuses literals in every spelling the URL parser accepts', async () => {
    for (const url of ['http://127.0.0.1/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://2130706433/', 'http://0x7f.1/', 'http://localhost.:80/', 'http://[fe80::1]/']) {
      expect(await refusal(url, { 'localhost.': ['127.0.0.1'] }), url).toMatch(/^invalid_request/);
    }
  });

  it('a name that does not resolve is refused', async () => {
    expect(await refusal('https://nowhere.example.test/')).toMatch(/does not resolve/);
  });

  it('allows private addresses when told to', async () => {
    expect(await allowedAddresses(parseWebhookUrl('http://127.0.0.1:9/'), resolver({}), true)).toEqual(['127.0.0.1']);
  });

  it('only http and https, no credentials', () => {
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'https://user:pw@example.com/', 'not a url', '']) {
      expect(() => parseWebhookUrl(url), url).toThrow(/url/);
    }
  });
});
