import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawClient } from '../gateway/raw-http.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, createConsoleUser, signIn, type ConsoleUser } from '../helpers/console.js';

/**
 * The Explorer page over HTTP: the token it carries works from the console's origin only, its CSP is
 * relaxed there alone, GraphiQL's files come from the gateway (brotli when offered), and the token's
 * origin is the one a browser sends (no default port).
 */
let t: TestApp;
let user: ConsoleUser;
let cookie: string;

beforeAll(async () => {
  t = await startTestApp();
  user = await createConsoleUser(t, { credits: 7 });
  cookie = (await signIn(t, user.email, user.password)).cookie!;
});
afterAll(async () => {
  await t?.close();
});

const tokenIn = (page: string) => /Bearer (wi_tok_[0-9a-f]{64})/.exec(page)?.[1];

describe('console explorer', () => {
  it("carries a console token for the console's origin, as the signed-in account", async () => {
    const res = await consoleGet(t, '/console/explorer', cookie);
    expect(res.status).toBe(200);
    const token = tokenIn(await res.text());
    expect(token).toBeDefined();
    const ask = (origin: string) =>
      fetch(`${t.baseUrl}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${token}`, origin, 'content-type': 'application/json' }, body: '{"query":"{ me { id credits } }"}' });
    const own = await ask(t.baseUrl);
    expect(await own.json()).toEqual({ data: { me: { id: user.accountId, credits: 7 } } });
    expect((await ask('http://127.0.0.1:1')).status).toBe(403);
  });

  it('adds nothing to the audit log however often it is opened: the page mints its own token, nobody created one', async () => {
    const events = async () => {
      const entries: string[] = [];
      for await (const e of t.services.audit.exportForAccount(user.accountId)) entries.push(e.event);
      return entries;
    };
    const before = await events();
    for (let i = 0; i < 3; i++) expect((await consoleGet(t, '/console/explorer', cookie)).status).toBe(200);
    expect(await events()).toEqual(before);
    expect(before).not.toContain('client_token.created');
  });

  it('relaxes the CSP on that page only, allowing its inline scripts by hash', async () => {
    const page = await consoleGet(t, '/console/explorer', cookie);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toMatch(/script-src 'self'( 'sha256-[A-Za-z0-9+/=]+'){4};/);
    expect(csp).toContain("style-src 'self' 'unsafe-inline'");
    expect(csp).not.toContain("'unsafe-eval'");
    const keys = await consoleGet(t, '/console/keys', cookie);
    expect(keys.headers.get('content-security-policy')).toContain("script-src 'self'; style-src 'self';");
  });

  it("serves GraphiQL's files from the gateway, to signed-in users", async () => {
    const js = await consoleGet(t, '/console/explorer/static/ruru.js', cookie, { 'accept-encoding': 'br' });
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await consoleGet(t, '/console/explorer/static/nope.js', cookie)).status).toBe(404);
    expect((await consoleGet(t, '/console/explorer/static/ruru.js', null)).status).toBe(303);
  });

  it('mints for the origin a browser sends: no default port', async () => {
    const raw = await RawClient.connect(Number(new URL(t.baseUrl).port));
    raw.socket.write(`GET /console/explorer HTTP/1.1\r\nHost: localhost:80\r\nCookie: ${cookie}\r\nConnection: close\r\n\r\n`);
    const res = await raw.response();
    expect(res.status).toBe(200);
    const token = tokenIn(res.body)!;
    const answer = await fetch(`${t.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, origin: 'http://localhost', 'content-type': 'application/json' },
      body: '{"query":"{ me { credits } }"}',
    });
    expect(answer.status).toBe(200);
  });
});
