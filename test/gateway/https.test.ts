/**
 * Served over HTTPS (PUBLIC_BASE_URL is https, or the request's protocol is): the console's session
 * cookie is Secure and `__Host-` prefixed, and every answer carries Strict-Transport-Security. Over
 * plain HTTP neither.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, createConsoleUser, signIn } from '../helpers/console.js';

const HSTS = 'max-age=31536000; includeSubDomains';
let httpsBase: TestApp;
let plain: TestApp;
let proxied: TestApp;
beforeAll(async () => {
  // TLS ends at a load balancer whose hop is not trusted (TRUST_PROXY unset): the public address says https.
  httpsBase = await startTestApp({ PUBLIC_BASE_URL: 'https://console.example.com' });
  plain = await startTestApp({ PUBLIC_BASE_URL: 'http://console.example.com' });
  proxied = await startTestApp({ TRUST_PROXY: '1' });
});
afterAll(async () => {
  for (const t of [httpsBase, plain, proxied]) await t?.close();
});

/** A same-origin sign-in as the browser on the public address sends it. */
const signInAt = (t: TestApp, origin: string, u: { email: string; password: string }, extra: Record<string, string> = {}) =>
  signIn(t, u.email, u.password, { origin, ...extra });

describe('PUBLIC_BASE_URL https, TRUST_PROXY unset', () => {
  it('the session cookie is __Host- prefixed and Secure, and it is the one read back', async () => {
    const u = await createConsoleUser(httpsBase);
    const res = await signInAt(httpsBase, 'https://console.example.com', u);
    expect(res.status).toBe(303);
    expect(res.setCookie).toMatch(/^__Host-console_session=[\w-]{43}; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    expect((await consoleGet(httpsBase, '/console', res.cookie)).status).toBe(200);
    // An unprefixed cookie of the same value is not a session here.
    expect((await consoleGet(httpsBase, '/console', res.cookie!.replace('__Host-', ''))).status).toBe(303);
    const out = await fetch(`${httpsBase.baseUrl}/console/sign-out`, { method: 'POST', redirect: 'manual', headers: { cookie: res.cookie!, origin: 'https://console.example.com', 'sec-fetch-site': 'same-origin' } });
    expect(out.headers.getSetCookie().join()).toMatch(/^__Host-console_session=; Max-Age=0; Path=\/; HttpOnly; Secure; SameSite=Strict/);
  });

  it("the explorer's client token is bound to the https origin, and its subscriptions use wss", async () => {
    const u = await createConsoleUser(httpsBase);
    const { cookie } = await signInAt(httpsBase, 'https://console.example.com', u);
    const page = await consoleGet(httpsBase, '/console/explorer', cookie);
    expect(page.status).toBe(200);
    const host = new URL(httpsBase.baseUrl).host;
    expect(await page.text()).toContain(`wss://${host}/graphql`);
    const tokens = await httpsBase.connection.db!.collection('client_tokens').find({ userId: { $ne: null } }).toArray();
    expect(tokens.map((t) => t.origins)).toContainEqual([`https://${host}`]);
  });

  it('every answer carries Strict-Transport-Security: pages, API errors, health, 404s', async () => {
    for (const path of ['/console/sign-in', '/healthz', '/api/playground/query', '/no/such/route']) {
      const res = await fetch(`${httpsBase.baseUrl}${path}`);
      expect(res.headers.get('strict-transport-security'), path).toBe(HSTS);
    }
  });
});

describe('over plain HTTP', () => {
  it('no Secure, no __Host-, no Strict-Transport-Security', async () => {
    const u = await createConsoleUser(plain);
    const res = await signInAt(plain, 'http://console.example.com', u);
    expect(res.status).toBe(303);
    expect(res.setCookie).toMatch(/^console_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(res.res.headers.get('strict-transport-security')).toBeNull();
    for (const t of [plain, proxied]) expect((await fetch(`${t.baseUrl}/healthz`)).headers.get('strict-transport-security')).toBeNull();
    // A forwarded protocol from an untrusted hop changes nothing.
    expect((await fetch(`${plain.baseUrl}/healthz`, { headers: { 'x-forwarded-proto': 'https' } })).headers.get('strict-transport-security')).toBeNull();
  });
});

describe("a trusted proxy's X-Forwarded-Proto: https", () => {
  it('Secure __Host- cookie and Strict-Transport-Security', async () => {
    const u = await createConsoleUser(proxied);
    const res = await signInAt(proxied, proxied.baseUrl.replace('http:', 'https:'), u, { 'x-forwarded-proto': 'https' });
    expect(res.status).toBe(303);
    expect(res.setCookie).toMatch(/^__Host-console_session=[\w-]{43}; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
    expect(res.res.headers.get('strict-transport-security')).toBe(HSTS);
  });
});
