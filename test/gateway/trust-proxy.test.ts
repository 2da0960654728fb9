/**
 * TRUST_PROXY as a hop count or the proxies' addresses: raw requests with forged X-Forwarded-For
 * chains, and the client address the gateway takes from them (request.ip, the audit log's IP).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createConsoleUser } from '../helpers/console.js';
import { RawClient } from './raw-http.js';

const apps: Record<string, TestApp> = {};
const SETTINGS = { unset: undefined, hop: '1', twoHops: '2', address: '127.0.0.1', addresses: '127.0.0.1, 203.0.113.0/24' } as const;

beforeAll(async () => {
  for (const [name, value] of Object.entries(SETTINGS)) {
    apps[name] = await startTestApp({
      TRUST_PROXY: value,
      // What the gateway made of the request's address and protocol.
      beforeListen: (app) => void app.get('/test/client', async (request) => ({ ip: request.ip, protocol: request.protocol })),
    });
  }
});
afterAll(async () => {
  for (const t of Object.values(apps)) await t.close();
});

/** One raw request (no client library normalising the headers), from 127.0.0.1. */
async function raw(t: TestApp, request: string) {
  const client = await RawClient.connect(Number(new URL(t.baseUrl).port));
  try {
    client.write(request);
    return await client.response();
  } finally {
    client.destroy();
  }
}

async function clientOf(t: TestApp, forwarded: string[]) {
  const headers = forwarded.map((h) => `${h}\r\n`).join('');
  const res = await raw(t, `GET /test/client HTTP/1.1\r\nHost: gateway.test\r\n${headers}Connection: close\r\n\r\n`);
  expect(res.status).toBe(200);
  return JSON.parse(res.body) as { ip: string; protocol: string };
}

describe('TRUST_PROXY', () => {
  // The client wrote 6.6.6.6 (and 10.9.9.9); the load balancer, at 127.0.0.1, appended 203.0.113.9.
  const forged = 'X-Forwarded-For: 6.6.6.6, 10.9.9.9, 203.0.113.9';

  it('unset: the socket address; forwarded headers are ignored', async () => {
    expect(await clientOf(apps.unset!, [forged, 'X-Forwarded-Proto: https'])).toEqual({ ip: '127.0.0.1', protocol: 'http' });
  });

  it('a hop count: the address that many hops in, never the client-written left-most one', async () => {
    expect(await clientOf(apps.hop!, [forged, 'X-Forwarded-Proto: https'])).toEqual({ ip: '203.0.113.9', protocol: 'https' });
    expect(await clientOf(apps.twoHops!, [forged])).toMatchObject({ ip: '10.9.9.9' });
    // Two X-Forwarded-For headers are one list, in order.
    expect(await clientOf(apps.hop!, ['X-Forwarded-For: 6.6.6.6', 'X-Forwarded-For: 198.51.100.4'])).toMatchObject({ ip: '198.51.100.4' });
  });

  it("the proxies' addresses: the first hop from the right that is not one of them", async () => {
    expect(await clientOf(apps.address!, [forged, 'X-Forwarded-Proto: https'])).toEqual({ ip: '203.0.113.9', protocol: 'https' });
    expect(await clientOf(apps.addresses!, [forged])).toMatchObject({ ip: '10.9.9.9' });
  });

  it('the audit log records that address for a console sign-in', async () => {
    const t = apps.hop!;
    const u = await createConsoleUser(t);
    const body = new URLSearchParams({ email: u.email, password: 'not the password at all' }).toString();
    const res = await raw(
      t,
      `POST /console/sign-in HTTP/1.1\r\nHost: gateway.test\r\nOrigin: http://gateway.test\r\nSec-Fetch-Site: same-origin\r\n${forged}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(res.status).toBe(401);
    const events = [];
    for await (const e of t.services.audit.exportForAccount(u.accountId)) events.push(e);
    expect(events.find((e) => e.event === 'console.sign_in_failed')).toMatchObject({ ip: '203.0.113.9' });
  });

  it('parses a hop count or an address list, and refuses true with a message naming the alternatives', () => {
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '0' }).TRUST_PROXY).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).TRUST_PROXY).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,fd00::/8,loopback' }).TRUST_PROXY).toEqual(['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', 'loopback']);
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY: .*every hop.*TRUST_PROXY=1.*TRUST_PROXY=10\.0\.0\.0\/8,127\.0\.0\.1/);
    for (const bad of ['yes', '10.0.0.0/33', '300.1.1.1', 'proxy.example.com', '1,2', '-1']) {
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(ConfigError);
    }
  });
});
