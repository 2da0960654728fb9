import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { KEY_PERMISSIONS } from '../../src/domain/keys/permissions.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * Key settings, expiry and roll across two gateway instances sharing one database (A and B both
 * cache keys behind their change feeds): every change holds on both.
 */
const APP = 'http://127.0.0.1:5173';
const actor = { actor: 'test', ip: '10.0.0.9', host: 'test-host' };
let a: TestApp;
let b: TestApp;
const clients: Client[] = [];

beforeAll(async () => {
  a = await startTestApp();
  b = await startTestApp();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await Promise.all([a?.close(), b?.close()]);
});

async function lookup(app: TestApp, key: string) {
  const res = await fetch(`${app.baseUrl}/api/playground/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ keyword: 'cat' }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function gql(app: TestApp, credential: string, query: string, origin?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${credential}` };
  if (origin) headers.origin = origin;
  const res = await fetch(`${app.baseUrl}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query }) });
  return { status: res.status, body: (await res.json()) as any };
}

/** A graphql-ws client; with `origin`, as a page on it opens it (client tokens need their origin). */
function socket(app: TestApp, authorization: string, onClosed: (code: number) => void, origin?: string): Client {
  const client = createClient({
    url: `${app.baseUrl.replace('http', 'ws')}/graphql`,
    webSocketImpl: origin
      ? class extends WebSocket {
          constructor(url: string, protocols?: string | string[]) {
            super(url, protocols, { headers: { origin } });
          }
        }
      : WebSocket,
    connectionParams: { Authorization: authorization },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
    on: { closed: (e) => onClosed((e as { code: number }).code) },
  });
  clients.push(client);
  return client;
}

/** Polls `check` every 25 ms until it holds or `deadlineMs` passes; returns how long it took. */
async function within(deadlineMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > deadlineMs) throw new Error(`not within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function newKey(settings: Parameters<TestApp['services']['keys']['create']>[3] = {}): Promise<TestAccount> {
  const acct = await a.createAccountWithKey({ credits: 100 });
  const created = await a.services.keys.create(acct.accountId, 'lifecycle key', actor, settings);
  return { accountId: acct.accountId, keyId: created.id, key: created.key };
}

const ME_KEY = '{ me { key { id name prefix expiresAt creditLimit creditsLeft refill rateLimitPerMinute permissions } } }';

describe('settings', () => {
  it('a key created with every setting shows them through me { key }, on both instances', async () => {
    const expiresAt = new Date(Date.now() + 30 * 86_400_000);
    const acct = await newKey({ expiresAt, creditLimit: 50, refill: 'daily', rateLimitPerMinute: 30, permissions: ['lookup', 'read'] });
    for (const app of [a, b]) {
      const res = await gql(app, acct.key, ME_KEY);
      expect(res.status).toBe(200);
      expect(res.body.data.me.key).toEqual({
        id: acct.keyId,
        name: 'lifecycle key',
        prefix: acct.key.slice(0, 12),
        expiresAt: expiresAt.toISOString(),
        creditLimit: 50,
        creditsLeft: 50,
        refill: 'daily',
        rateLimitPerMinute: 30,
        permissions: ['lookup', 'read'],
      });
    }
  });

  it('a key stored before the settings existed keeps every right and no limit', async () => {
    const acct = await a.createAccountWithKey({ credits: 5 });
    // As the previous release wrote it: none of the new fields.
    await a.connection.collection('api_keys').updateOne(
      { hash: { $exists: true }, prefix: acct.key.slice(0, 12) },
      { $unset: { expiresAt: '', creditLimit: '', creditsLeft: '', refill: '', refilledFor: '', rateLimitPerMinute: '', permissions: '', rolledFrom: '', expiringNotifiedAt: '' } },
    );
    const res = await gql(b, acct.key, ME_KEY);
    expect(res.body.data.me.key).toMatchObject({ expiresAt: null, creditLimit: null, creditsLeft: null, refill: null, rateLimitPerMinute: null, permissions: [...KEY_PERMISSIONS] });
    expect((await lookup(a, acct.key)).status).toBe(200);
  });

  it('bad settings are 400s that name the rule, and change nothing', async () => {
    const acct = await newKey();
    const keys = a.services.keys;
    await expect(keys.update(acct.keyId, { expiresAt: new Date(Date.now() - 1000).toISOString() }, actor)).rejects.toMatchObject({ code: 'invalid_request', message: 'expiresAt must be in the future' });
    await expect(keys.update(acct.keyId, { refill: 'daily' }, actor)).rejects.toMatchObject({ message: 'refill needs a credit limit' });
    await expect(keys.update(acct.keyId, { creditLimit: 0 }, actor)).rejects.toMatchObject({ field: 'creditLimit' });
    await expect(keys.update(acct.keyId, { permissions: ['lookup', 'admin'] }, actor)).rejects.toMatchObject({ field: 'permissions' });
    await expect(keys.roll(acct.keyId, '8d', actor)).rejects.toMatchObject({ field: 'grace' });
    await expect(keys.create(acct.accountId, 'x', actor, { expiresAt: 'tomorrow' })).rejects.toMatchObject({ field: 'expiresAt' });
    expect(await keys.get(acct.keyId)).toMatchObject({ expiresAt: null, creditLimit: null, refill: null, permissions: [...KEY_PERMISSIONS] });
  });

  it('a new credit limit moves what is left by the difference; removing it removes the refill', async () => {
    const acct = await newKey({ creditLimit: 5, refill: 'monthly' });
    expect((await lookup(a, acct.key)).status).toBe(200);
    expect((await a.services.keys.get(acct.keyId)).creditsLeft).toBe(4);
    expect(await a.services.keys.update(acct.keyId, { creditLimit: 10 }, actor)).toMatchObject({ creditLimit: 10, creditsLeft: 9, refill: 'monthly' });
    expect(await a.services.keys.update(acct.keyId, { creditLimit: 2 }, actor)).toMatchObject({ creditLimit: 2, creditsLeft: 1 });
    expect(await a.services.keys.update(acct.keyId, { creditLimit: null }, actor)).toMatchObject({ creditLimit: null, creditsLeft: null, refill: null });
  });

  it('every change is audited: key.created with its settings, key.updated with the change', async () => {
    const acct = await newKey({ creditLimit: 3 });
    await a.services.keys.update(acct.keyId, { rateLimitPerMinute: 7 }, actor);
    const entries = [];
    for await (const e of a.services.audit.exportForAccount(acct.accountId)) entries.push(e);
    expect(entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ event: 'key.created', keyId: acct.keyId, details: expect.objectContaining({ creditLimit: 3 }) }),
        expect.objectContaining({ event: 'key.updated', keyId: acct.keyId, ip: '10.0.0.9', details: expect.objectContaining({ rateLimitPerMinute: 7 }) }),
      ]),
    );
  });
});

describe('expiry', () => {
  it('from expiresAt the key is 401 api_key_expired on both instances; its subscription and client tokens end within 5 s', async () => {
    const acct = await newKey({ expiresAt: new Date(Date.now() + 60_000) });
    const minted = await fetch(`${a.baseUrl}/api/client-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ origins: [APP] }),
    }).then((r) => r.json() as Promise<any>);
    // Both instances hold the key (cached) before the change.
    for (const app of [a, b]) expect((await lookup(app, acct.key)).status).toBe(200);
    expect((await gql(b, minted.token, '{ me { credits } }', APP)).status).toBe(200);
    const job = await a.services.jobs.create({ accountId: acct.accountId, keyId: acct.keyId }, ['a slow fox']);
    let closedWith: number | undefined;
    const client = socket(b, `Bearer ${acct.key}`, (code) => (closedWith = code));
    const seen: unknown[] = [];
    const ended = new Promise<any>((resolve) => {
      client.subscribe({ query: `subscription { jobStatus(jobId: "${job.jobId}") { status } }` }, { next: (m) => seen.push(m), error: resolve, complete: () => resolve('completed') });
    });
    await until(() => seen.length > 0, 'the subscription is open');

    const expiresAt = new Date(Date.now() + 1500);
    await a.services.keys.update(acct.keyId, { expiresAt }, actor);
    const error = await ended;
    const endedAt = Date.now();
    expect(error).toEqual([expect.objectContaining({ message: 'API key expired', extensions: expect.objectContaining({ code: 'UNAUTHENTICATED' }) })]);
    expect(endedAt - expiresAt.getTime()).toBeLessThan(5000);
    await until(() => closedWith !== undefined);
    expect(closedWith).toBe(4401);
    for (const app of [a, b]) {
      const rest = await lookup(app, acct.key);
      expect(rest).toMatchObject({ status: 401, body: { error: 'API key expired', code: 'api_key_expired' } });
      const graph = await gql(app, acct.key, '{ me { credits } }');
      expect(graph.status).toBe(401);
      expect(graph.body.errors[0]).toMatchObject({ message: 'API key expired', extensions: { code: 'UNAUTHENTICATED', reason: 'api_key_expired' } });
      expect((await gql(app, minted.token, '{ me { credits } }', APP)).status).toBe(401);
    }
    await expect(a.services.keys.update(acct.keyId, { expiresAt: null }, actor)).rejects.toMatchObject({ message: 'the key has expired' });
  });

  it('key update on one instance holds on the other within 1 s', async () => {
    const acct = await newKey();
    const verified = async () => {
      const result = await b.services.keyVerifier.verify(`Bearer ${acct.key}`);
      return result.ok ? result.principal : null;
    };
    expect(await verified()).toMatchObject({ rateLimitPerMinute: null });
    expect(b.services.keyVerifier.cachedKeys).toBeGreaterThan(0);
    await a.services.keys.update(acct.keyId, { rateLimitPerMinute: 12, permissions: ['lookup'] }, actor);
    await within(1000, async () => (await verified())?.rateLimitPerMinute === 12);
    expect(await verified()).toMatchObject({ permissions: ['lookup'] });
    // An expiry moved forward to just now is refused there too, within the second.
    await a.services.keys.update(acct.keyId, { expiresAt: new Date(Date.now() + 200) }, actor);
    await within(1500, async () => (await lookup(b, acct.key)).status === 401);
  });
});

describe('roll', () => {
  it('the new key works at once on both instances and copies the settings; the old one until the grace ends', async () => {
    const expiresAt = new Date(Date.now() + 90 * 86_400_000);
    const acct = await newKey({ expiresAt, creditLimit: 20, refill: 'monthly', rateLimitPerMinute: 40, permissions: ['lookup', 'read', 'webhooks'] });
    for (const app of [a, b]) expect((await lookup(app, acct.key)).status).toBe(200);
    const rolled = await a.services.keys.roll(acct.keyId, '3s', actor);
    expect(rolled.key).toMatch(/^wi_live_[0-9a-f]{64}$/);
    expect(rolled.prefix).not.toBe(acct.key.slice(0, 12));
    expect(rolled.oldKeyExpiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 3000);
    for (const app of [a, b]) {
      expect((await lookup(app, rolled.key)).status).toBe(200);
      expect((await lookup(app, acct.key)).status).toBe(200);
    }
    expect((await gql(b, rolled.key, ME_KEY)).body.data.me.key).toMatchObject({
      id: rolled.id,
      name: 'lifecycle key',
      expiresAt: expiresAt.toISOString(),
      creditLimit: 20,
      // The old key spent 2 before the roll, the new one 2 since: it started from what was left.
      creditsLeft: 16,
      refill: 'monthly',
      rateLimitPerMinute: 40,
      permissions: ['lookup', 'read', 'webhooks'],
    });
    await until(() => Date.now() > rolled.oldKeyExpiresAt.getTime(), 'the grace ends');
    for (const app of [a, b]) {
      expect(await lookup(app, acct.key)).toMatchObject({ status: 401, body: { code: 'api_key_expired' } });
      expect((await lookup(app, rolled.key)).status).toBe(200);
    }
    const entries = [];
    for await (const e of a.services.audit.exportForAccount(acct.accountId)) if (e.event === 'key.rolled') entries.push(e);
    expect(entries).toEqual([
      expect.objectContaining({
        keyId: rolled.id,
        details: expect.objectContaining({ oldKeyId: acct.keyId, oldKeyPrefix: acct.key.slice(0, 12), newKeyId: rolled.id, newKeyPrefix: rolled.prefix, graceSeconds: 3 }),
      }),
    ]);
  });

  it('the old key never outlives its own expiry, and a grace of 0 ends it at once', async () => {
    const soon = new Date(Date.now() + 60_000);
    const acct = await newKey({ expiresAt: soon });
    const rolled = await b.services.keys.roll(acct.keyId, '7d', actor);
    expect(rolled.oldKeyExpiresAt.toISOString()).toBe(soon.toISOString());
    const again = await b.services.keys.roll(rolled.id, '0', actor);
    expect(again.oldKeyExpiresAt.getTime()).toBeLessThanOrEqual(Date.now());
    for (const app of [a, b]) expect(await lookup(app, rolled.key)).toMatchObject({ status: 401, body: { code: 'api_key_expired' } });
  });
});

describe('permissions', () => {
  /** A jobStatus subscription: `seen` fills with its pushes; `ended` resolves with its error, or 'completed'. */
  function watchJob(client: Client, jobId: string) {
    const seen: any[] = [];
    const ended = new Promise<any>((resolve) => {
      client.subscribe({ query: `subscription { jobStatus(jobId: "${jobId}") { status } }` }, { next: (m) => seen.push(m), error: resolve, complete: () => resolve('completed') });
    });
    return { seen, ended };
  }

  async function mint(key: string) {
    const res = await fetch(`${a.baseUrl}/api/client-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ origins: [APP], scopes: ['read'] }),
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as { token: string }).token;
  }

  const FORBIDDEN = [expect.objectContaining({ message: 'This API key does not have permission for this operation', extensions: expect.objectContaining({ code: 'FORBIDDEN', reason: 'key_permission' }) })];

  it('removing read on A ends that key’s subscriptions on B within 5 s (key_permission), its tokens’ too; the socket stays for what it may still run', async () => {
    const losing = await newKey();
    const token = await mint(losing.key);
    const job = await a.services.jobs.create({ accountId: losing.accountId, keyId: losing.keyId }, ['a heron']);
    let closedWith: number | undefined;
    const client = socket(b, `Bearer ${losing.key}`, (code) => (closedWith = code));
    const byKey = watchJob(client, job.jobId);
    const byToken = watchJob(socket(b, `Bearer ${token}`, () => undefined, APP), job.jobId);
    await until(() => byKey.seen.length > 0 && byToken.seen.length > 0, 'both subscriptions are open');

    await a.services.keys.update(losing.keyId, { permissions: ['lookup', 'generate', 'client_tokens', 'webhooks'] }, actor);
    const updatedAt = Date.now();
    expect(await byKey.ended).toEqual(FORBIDDEN);
    expect(Date.now() - updatedAt).toBeLessThan(5000);
    expect(await byToken.ended).toEqual(FORBIDDEN);
    expect(Date.now() - updatedAt).toBeLessThan(5000);

    // The key still works for what it keeps, on the same socket; a new subscription is refused.
    const again = watchJob(client, job.jobId);
    expect(await again.ended).toEqual(FORBIDDEN);
    expect(again.seen).toEqual([]);
    const lookedUp = await new Promise<any>((resolve, reject) => {
      client.subscribe({ query: 'mutation { lookup(keyword: "cat") { keyword } }' }, { next: resolve, error: reject, complete: () => undefined });
    });
    expect(lookedUp).toEqual({ data: { lookup: { keyword: 'cat' } } });
    expect(closedWith).toBeUndefined();
    const refused = await gql(b, losing.key, '{ me { credits } }');
    expect(refused.status).toBe(403);
    expect(refused.body.errors).toEqual(FORBIDDEN);
  });

  it('a key that keeps read keeps its subscriptions, through its own edit and another key’s loss', async () => {
    const keeping = await newKey();
    const trimmed = await newKey();
    const losing = await newKey();
    const jobs = await Promise.all(
      [keeping, trimmed, losing].map((k) => a.services.jobs.create({ accountId: k.accountId, keyId: k.keyId }, ['a kite'])),
    );
    const [kept, trimmedKept, lost] = [keeping, trimmed, losing].map((k, i) => watchJob(socket(b, `Bearer ${k.key}`, () => undefined), jobs[i]!.jobId));
    await until(() => [kept, trimmedKept, lost].every((s) => s.seen.length > 0), 'the subscriptions are open');

    // `trimmed` loses generate (not read), then `losing` loses read: B hears them in that order.
    await a.services.keys.update(trimmed.keyId, { permissions: ['lookup', 'read'] }, actor);
    await a.services.keys.update(losing.keyId, { permissions: ['lookup'] }, actor);
    expect(await lost.ended).toEqual(FORBIDDEN);

    // The others still run: cancelling their jobs reaches them, and they complete.
    for (const [k, i] of [[keeping, 0], [trimmed, 1]] as const) {
      await a.services.jobs.cancel({ accountId: k.accountId, keyId: k.keyId }, jobs[i]!.jobId, { baseUrl: a.baseUrl });
    }
    for (const s of [kept, trimmedKept]) {
      expect(await s.ended).toBe('completed');
      expect(s.seen.at(-1)).toEqual({ data: { jobStatus: { status: 'canceled' } } });
    }
  });
});
