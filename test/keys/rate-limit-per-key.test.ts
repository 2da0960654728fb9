import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from '../gateway/fakes.js';

/**
 * A key's own `rateLimitPerMinute` replaces RATE_LIMIT_PER_MINUTE for that key (issue 24), across
 * two gateways sharing the database, through the same shared count and headers. The windows follow an
 * injected clock, so nothing sleeps.
 */
const MINUTE = 60_000;
// In the future: the TTL index would remove windows that ended before the real clock.
const T0 = Date.UTC(2099, 2, 1, 12, 0, 0);
const clock = { now: T0 + 15_000 };
const APP = 'http://127.0.0.1:5173';
const actor = { actor: 'test', ip: null, host: 'test' };

const apps: TestApp[] = [];
let accountId: string;

beforeAll(async () => {
  for (let i = 0; i < 2; i++) {
    apps.push(await startTestApp({ RATE_LIMIT_PER_MINUTE: '10', deps: { definitionProvider: new ScriptedProvider(), rateLimitNow: () => clock.now } }));
  }
  accountId = (await apps[0].createAccountWithKey({ credits: 1000 })).accountId;
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

async function keyWithLimit(rateLimitPerMinute: number | null) {
  return apps[0].services.keys.create(accountId, `limited ${rateLimitPerMinute}`, actor, { rateLimitPerMinute });
}

async function lookup(t: TestApp, key: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.baseUrl}/api/playground/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    body: JSON.stringify({ keyword: 'oak' }),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

function gql(t: TestApp, credential: string, query: string, origin?: string) {
  return fetch(`${t.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${credential}`, ...(origin ? { origin } : {}) },
    body: JSON.stringify({ query }),
  });
}

describe("a key's own rate limit", () => {
  it('holds exactly across two instances: 3 of 12 concurrent requests pass, the rest are 429 with its own RateLimit-Policy', async () => {
    clock.now = T0 + 15_000;
    const key = await keyWithLimit(3);
    const before = (await apps[0].services.credits.balances([accountId]))[0]!;
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => lookup(apps[i % 2]!, key.key)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    const refused = results.filter((r) => r.status === 429);
    expect(refused).toHaveLength(9);
    for (const r of results) expect(r.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
    for (const r of refused) {
      expect(r.body).toMatchObject({ code: 'rate_limited' });
      expect(r.headers.get('retry-after')).toBe('45');
    }
    expect((await apps[0].services.credits.balances([accountId]))[0]).toBe(before - 3);
  });

  it('can be higher than the server limit, and another key keeps the server limit (10)', async () => {
    clock.now = T0 + MINUTE + 15_000;
    const generous = await keyWithLimit(25);
    const plain = await keyWithLimit(null);
    const generousResults = await Promise.all(Array.from({ length: 30 }, (_, i) => lookup(apps[i % 2]!, generous.key)));
    expect(generousResults.filter((r) => r.status === 200)).toHaveLength(25);
    const plainResults = await Promise.all(Array.from({ length: 14 }, (_, i) => lookup(apps[i % 2]!, plain.key)));
    expect(plainResults.filter((r) => r.status === 200)).toHaveLength(10);
    expect(plainResults[0]!.headers.get('ratelimit-policy')).toBe('"default";q=10;w=60');
  });

  it('an edit of the limit applies on the other instance, and client tokens count against their key’s own limit', async () => {
    clock.now = T0 + 2 * MINUTE + 15_000;
    const key = await keyWithLimit(100);
    const minted = await fetch(`${apps[0]!.baseUrl}/api/client-tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
      body: JSON.stringify({ origins: [APP] }),
    });
    const { token } = (await minted.json()) as { token: string };
    // Seen by the second instance first, so its cache holds the old limit until the change arrives.
    expect((await lookup(apps[1]!, key.key)).headers.get('ratelimit-policy')).toBe('"default";q=100;w=60');
    await apps[0].services.keys.update(key.id, { rateLimitPerMinute: 4 }, actor);
    const deadline = Date.now() + 15_000;
    let policy: string | null = null;
    while (Date.now() < deadline && policy !== '"default";q=4;w=60') {
      policy = (await lookup(apps[1]!, key.key)).headers.get('ratelimit-policy');
    }
    expect(policy).toBe('"default";q=4;w=60');
    // The window's count goes on: whatever is left of 4 units, then 429, for the key and its token alike.
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await gql(apps[i % 2]!, token, '{ me { credits } }', APP)).status);
    expect(statuses).toContain(429);
    const refused = await gql(apps[0]!, token, '{ me { credits } }', APP);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"default";q=4;w=60');
  });

  it('charging GraphQL fields count their catalog units against the key’s own limit: 5 aliased lookups over a limit of 4 are refused whole', async () => {
    clock.now = T0 + 3 * MINUTE + 15_000;
    const key = await keyWithLimit(4);
    const before = (await apps[0].services.credits.balances([accountId]))[0]!;
    const five = `mutation { ${Array.from({ length: 5 }, (_, i) => `l${i}: lookup(keyword: "w${i}") { credits }`).join(' ')} }`;
    const res = await gql(apps[1]!, key.key, five);
    expect(res.status).toBe(429);
    expect(((await res.json()) as any).errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', reason: 'rate_limited' });
    expect((await apps[0].services.credits.balances([accountId]))[0]).toBe(before);
    const four = `mutation { ${Array.from({ length: 4 }, (_, i) => `l${i}: lookup(keyword: "w${i}") { credits }`).join(' ')} }`;
    const ok = await gql(apps[0]!, key.key, four);
    // The refused operation counted its first unit (the request): 1 + 4 passes a limit of 4.
    expect(ok.status).toBe(429);
    clock.now = T0 + 4 * MINUTE + 15_000;
    const fresh = await gql(apps[0]!, key.key, four);
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('ratelimit')).toBe('"default";r=0;t=45');
    expect((await apps[0].services.credits.balances([accountId]))[0]).toBe(before - 4);
  });
});
