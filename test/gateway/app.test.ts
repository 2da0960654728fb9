import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedMongo, type EmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from './fakes.js';

/** App-level behaviour: provider failures over HTTP, SERVICES selection, rate limits, database outage. */
const apps: TestApp[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

async function start(...args: Parameters<typeof startTestApp>) {
  const app = await startTestApp(...args);
  apps.push(app);
  return app;
}

async function post(t: TestApp, path: string, body: unknown, key?: string) {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

describe('provider failures over HTTP', () => {
  let t: TestApp;
  const provider = new ScriptedProvider();
  beforeAll(async () => {
    t = await start({ deps: { definitionProvider: provider } });
  });

  it('unavailable → 503 with Retry-After, not charged; failed → 502, not charged', async () => {
    const acc = await t.createAccountWithKey({ credits: 2 });
    provider.mode = 'unavailable';
    const a = await post(t, '/api/playground/query', { keyword: 'cat' }, acc.key);
    expect(a.status).toBe(503);
    expect(a.body).toEqual({ error: 'Upstream provider unavailable', code: 'provider_unavailable', requestId: expect.any(String) });
    expect(a.headers.get('retry-after')).toBe('5');
    provider.mode = 'crash';
    const b = await post(t, '/api/playground/query', { keyword: 'cat' }, acc.key);
    expect(b.status).toBe(502);
    expect(b.body.code).toBe('provider_failed');
    expect(JSON.stringify(b.body)).not.toMatch(/provider bug|at .*\.ts/);
    expect(await t.services.credits.balances([acc.accountId])).toEqual([2]);
    const refunds = [];
    for await (const e of t.services.audit.exportForAccount(acc.accountId)) if (e.event === 'credits.refunded') refunds.push(e);
    expect(refunds).toHaveLength(2);
    provider.mode = 'ok';
  });

  it('a cached definition skips the provider, still charged; shared through the database', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    provider.calls = [];
    const first = await post(t, '/api/playground/query', { keyword: 'zebra' }, acc.key);
    const second = await post(t, '/api/playground/query', { keyword: 'zebra' }, acc.key);
    expect(first.body.definition).toBe('definition of zebra');
    expect(second.body).toEqual({ keyword: 'zebra', definition: 'definition of zebra', credits: 3 });
    expect(provider.calls).toEqual(['zebra']);
    const stored = await t.connection.db!.collection('definition_cache').findOne({ provider: 'scripted', keyword: 'zebra' });
    expect(stored?.definition).toBe('definition of zebra');
    expect(stored?.expiresAt.getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
    const ttl = (await t.connection.db!.collection('definition_cache').indexes()).find((i) => i.key.expiresAt === 1);
    expect(ttl?.expireAfterSeconds).toBe(0);
  });
});

describe('SERVICES selects the routes', () => {
  it('SERVICES=images: no definition route; SERVICES=definitions: no image route', async () => {
    const images = await start({ SERVICES: 'images' });
    const defs = await start({ SERVICES: 'definitions' });
    const acc = await images.createAccountWithKey({ credits: 5 });
    expect((await post(images, '/api/playground/query', { keyword: 'cat' }, acc.key)).status).toBe(404);
    expect((await post(defs, '/api/playground/query', { keyword: 'cat' }, acc.key)).status).toBe(200);
    const onDefs = await post(defs, '/api/playground/images', { prompts: ['a cat'] }, acc.key);
    expect(onDefs.status).toBe(404);
    expect(onDefs.body.code).toBe('route_not_found');
    expect((await fetch(`${defs.baseUrl}/healthz`)).status).toBe(200);
  });
});

describe('rate limit', () => {
  it('RATE_LIMIT_PER_MINUTE: the next request gets 429 with Retry-After', async () => {
    const t = await start({ RATE_LIMIT_PER_MINUTE: '2' });
    const acc = await t.createAccountWithKey({ credits: 10 });
    expect((await post(t, '/api/playground/query', { keyword: 'a' }, acc.key)).status).toBe(200);
    expect((await post(t, '/api/playground/query', { keyword: 'b' }, acc.key)).status).toBe(200);
    const limited = await post(t, '/api/playground/query', { keyword: 'c' }, acc.key);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'Too many requests', code: 'rate_limited', requestId: expect.any(String) });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await t.services.credits.balances([acc.accountId])).toEqual([8]);
  });
});

describe('database outage', () => {
  let db: EmbeddedMongo;
  afterAll(async () => {
    await db?.stop();
  });

  it('503 with Retry-After while the database is unreachable; readyz says so; healthz stays up', async () => {
    db = await startEmbeddedMongo({ port: 0 });
    const { connectDatabase } = await import('../../src/data/connection.js');
    const { buildServices } = await import('../../src/services.js');
    const { buildApp } = await import('../../src/http/app.js');
    const { loadConfig } = await import('../../src/config.js');
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', MONGODB_URI: db.uri });
    const connection = await connectDatabase(db.uri, { dbName: 'outage', serverSelectionTimeoutMS: 500 });
    const services = await buildServices(config, { connection, keyChanges: 'poll' });
    const app = await buildApp({ config, services, logger: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    try {
      const account = await services.credits.createAccount('o', 5, { actor: 't', ip: null, host: 'h' });
      const key = await services.keys.create(account.id, 'k', { actor: 't', ip: null, host: 'h' });
      await db.stop();
      const res = await fetch(`${base}/api/playground/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: '{"keyword":"cat"}',
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.json()).toEqual({ error: 'Service temporarily unavailable', code: 'database_unavailable', requestId: expect.any(String) });
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await app.close();
      await services.close().catch(() => undefined);
      await connection.close(true).catch(() => undefined);
    }
  });
});

describe('faults and logs', () => {
  it('an unexpected error is a masked 500, logged with the request id; keys never reach the logs', async () => {
    const lines: string[] = [];
    const t = await start({
      LOG_LEVEL: 'info',
      logStream: { write: (line: string) => lines.push(line) },
      beforeListen: (app) => {
        app.post('/test/boom', async () => {
          throw new Error('secret internal detail');
        });
      },
    });
    const acc = await t.createAccountWithKey({ credits: 2 });
    const res = await post(t, '/test/boom', {}, acc.key);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'Internal server error', code: 'internal_error', requestId: expect.any(String) });
    const records = () => lines.map((l) => JSON.parse(l) as { level: number; requestId?: string; err?: { message?: string } });
    const logged = records().find((r) => r.level >= 50 && r.requestId === res.body.requestId);
    expect(logged, lines.slice(-3).join('')).toBeDefined();
    expect(logged!.err?.message).toBe('secret internal detail');
    expect((await post(t, '/api/playground/query', { keyword: 'cat' }, acc.key)).status).toBe(200);
    expect((await post(t, '/api/playground/query', { keyword: 'cat' }, 'wi_live_' + 'e'.repeat(64))).status).toBe(401);
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.join('')).not.toContain(acc.key.slice(8));
    expect(lines.join('')).not.toContain('e'.repeat(64));
  });
});
