import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from './fakes.js';

/**
 * RATE_LIMIT_PER_MINUTE across instances (issue 19, item 3): three gateways on one database share one
 * count per API key. The windows follow an injected clock, so the reset needs no sleep.
 */
const MINUTE = 60_000;
// In the future: the TTL index would remove windows that ended before the real clock.
const T0 = Date.UTC(2099, 0, 1, 12, 0, 0);
const clock = { now: T0 + 10_000 };

const apps: TestApp[] = [];
let acc: TestAccount;
beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    apps.push(await startTestApp({ RATE_LIMIT_PER_MINUTE: '5', deps: { definitionProvider: new ScriptedProvider(), rateLimitNow: () => clock.now } }));
  }
  acc = await apps[0].createAccountWithKey({ credits: 100 });
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

async function lookup(t: TestApp, key: string, keyword: string) {
  const res = await fetch(`${t.baseUrl}/api/playground/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ keyword }),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

describe('rate limit shared by three gateways', () => {
  it('lets exactly 5 of 15 concurrent requests over three instances through; the rest are 429 with Retry-After and the RateLimit headers', async () => {
    const results = await Promise.all(Array.from({ length: 15 }, (_, i) => lookup(apps[i % 3], acc.key, `word${i}`)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    expect(ok).toHaveLength(5);
    expect(refused).toHaveLength(10);
    // 50 s left in the window at T0 + 10 s.
    for (const r of results) expect(r.headers.get('ratelimit-policy')).toBe('"default";q=5;w=60');
    expect(ok.map((r) => r.headers.get('ratelimit')).sort()).toEqual([0, 1, 2, 3, 4].map((n) => `"default";r=${n};t=50`));
    for (const r of refused) {
      expect(r.body).toEqual({ error: 'Too many requests', code: 'rate_limited', requestId: expect.any(String) });
      expect(r.headers.get('retry-after')).toBe('50');
      expect(r.headers.get('ratelimit')).toBe('"default";r=0;t=50');
    }
    // Only the admitted lookups ran and were charged.
    expect(await apps[0].services.credits.balances([acc.accountId])).toEqual([95]);
    const windows = await apps[0].connection.db!.collection('rate_limits').find({ _id: `${acc.keyId}:${T0}` as never }).toArray();
    expect(windows.map((w) => w.n)).toEqual([5]);
  });

  it('the next window starts afresh on every instance', async () => {
    clock.now = T0 + MINUTE + 30_000;
    for (const t of apps) {
      const r = await lookup(t, acc.key, 'fresh');
      expect(r.status).toBe(200);
    }
    const fourth = await lookup(apps[1], acc.key, 'fresh');
    expect(fourth.headers.get('ratelimit')).toBe('"default";r=1;t=30');
  });

  it('GraphQL over HTTP counts against the same key (one unit per request): 429 with Retry-After', async () => {
    clock.now = T0 + 2 * MINUTE;
    const gql = () =>
      fetch(`${apps[2].baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${acc.key}` },
        body: JSON.stringify({ query: '{ me { credits } }' }),
      });
    expect((await gql()).status).toBe(200);
    const rest = await lookup(apps[0], acc.key, 'x');
    expect(rest.headers.get('ratelimit')).toBe('"default";r=3;t=60');
    for (let i = 0; i < 3; i++) expect((await lookup(apps[(i + 1) % 3], acc.key, 'x')).status).toBe(200);
    const refused = await gql();
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
  });

  it('every charging GraphQL field counts: 15 aliased lookups are 15 units, refused whole before anything runs', async () => {
    clock.now = T0 + 3 * MINUTE;
    const aliased = (n: number) => `mutation { ${Array.from({ length: n }, (_, i) => `l${i}: lookup(keyword: "w${i}") { credits }`).join(' ')} }`;
    const gql = (query: string, headers: Record<string, string> = { authorization: `Bearer ${acc.key}` }) =>
      fetch(`${apps[1].baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });
    const before = (await apps[0].services.credits.balances([acc.accountId]))[0]!;
    const over = await gql(aliased(15));
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('60');
    expect(((await over.json()) as any).errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', reason: 'rate_limited' });
    expect((await apps[0].services.credits.balances([acc.accountId]))[0]).toBe(before);
    // The refused 14 added nothing: the request's own unit and 4 more fit in the window of 5.
    const fits = await gql(aliased(4));
    expect(fits.status).toBe(200);
    expect(fits.headers.get('ratelimit')).toBe('"default";r=0;t=60');
    expect(((await fits.json()) as any).data.l3.credits).toBe(before - 4);
  });

  it("a client token's requests and charging fields count against its key, over HTTP and WebSocket", async () => {
    clock.now = T0 + 4 * MINUTE;
    const origin = 'http://127.0.0.1:5173';
    const { token } = await apps[0].services.clientTokens.mint({ accountId: acc.accountId, keyId: acc.keyId }, { origins: [origin] }, { actor: 'test', ip: null, host: 'test' });
    const ws = createClient({
      url: `${apps[2].baseUrl.replace('http', 'ws')}/graphql`,
      webSocketImpl: class extends WebSocket {
        constructor(url: string, protocols: string[]) {
          super(url, protocols, { headers: { origin } });
        }
      },
      connectionParams: { Authorization: `Bearer ${token}` },
      retryAttempts: 0,
    });
    try {
      const run = (query: string) =>
        new Promise<any>((resolve) => {
          ws.subscribe({ query }, { next: resolve, error: resolve, complete: () => undefined });
        });
      // connection_init counts 1, the operation 1 + 2 more for its three lookups: 4 of 5.
      const three = await run('mutation { a: lookup(keyword: "a") { credits } b: lookup(keyword: "b") { credits } c: lookup(keyword: "c") { credits } }');
      expect(three.data?.c?.credits, JSON.stringify(three)).toBeGreaterThan(0);
      expect((await run('{ me { credits } }')).data?.me).toBeDefined();
      const refused = await run('{ me { credits } }');
      expect(refused[0] ?? refused.errors?.[0], JSON.stringify(refused)).toMatchObject({ extensions: { code: 'RATE_LIMITED' } });
      const overHttp = await fetch(`${apps[0].baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, origin },
        body: '{"query":"{ me { credits } }"}',
      });
      expect(overHttp.status).toBe(429);
      expect(overHttp.headers.get('access-control-allow-origin')).toBe(origin);
      expect(overHttp.headers.get('ratelimit')).toBe('"default";r=0;t=60');
    } finally {
      await ws.dispose();
    }
  });

  it('a request refused before the key is known (401) carries no RateLimit headers', async () => {
    const r = await lookup(apps[0], `wi_live_${'0'.repeat(64)}`, 'x');
    expect(r.status).toBe(401);
    expect(r.headers.get('ratelimit')).toBeNull();
  });
});

describe('no limit configured', () => {
  it('sends no RateLimit headers and counts nothing in the database', async () => {
    const t = await startTestApp({ deps: { definitionProvider: new ScriptedProvider() } });
    try {
      const other = await t.createAccountWithKey({ credits: 3 });
      const r = await lookup(t, other.key, 'cat');
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit')).toBeNull();
      expect(r.headers.get('ratelimit-policy')).toBeNull();
      expect(await t.connection.db!.collection('rate_limits').countDocuments({ _id: { $regex: `^${other.keyId}:` } } as never)).toBe(0);
    } finally {
      await t.close();
    }
  });
});
