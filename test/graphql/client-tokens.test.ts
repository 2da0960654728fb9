import { createHash } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * Client tokens against real gateways on one database: minting (REST and GraphQL), scopes, the credit
 * budget under concurrency, expiry ending an open subscription, revocation across two instances,
 * CORS and the media type of refusals, and what a default graphql-ws client learns of a refusal.
 */

const APP = 'http://127.0.0.1:5173';
let a: TestApp;
let b: TestApp;
let acct: TestAccount;
const clients: Client[] = [];

beforeAll(async () => {
  a = await startTestApp();
  b = await startTestApp();
  acct = await a.createAccountWithKey({ credits: 1000 });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await b?.close();
  await a?.close();
});

async function mint(body: unknown, key = acct.key, app = a) {
  const res = await fetch(`${app.baseUrl}/api/client-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function gql(query: string, opts: { token?: string; key?: string; origin?: string; app?: TestApp; accept?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const credential = opts.token ?? opts.key;
  if (credential) headers.authorization = `Bearer ${credential}`;
  if (opts.origin) headers.origin = opts.origin;
  if (opts.accept) headers.accept = opts.accept;
  const res = await fetch(`${(opts.app ?? a).baseUrl}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query }) });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const balance = async () => (await a.services.credits.getAccount(acct.accountId))!.credits;

/** A graphql-ws client as a page on `origin` opens it (browsers always send Origin). */
function pageSocket(app: TestApp, authorization: string | undefined, origin: string | undefined, opts: Partial<Parameters<typeof createClient>[0]> = {}): Client {
  const client = createClient({
    url: `${app.baseUrl.replace('http', 'ws')}/graphql`,
    webSocketImpl: class extends WebSocket {
      constructor(url: string, protocols: string[]) {
        super(url, protocols, origin ? { headers: { origin } } : {});
      }
    },
    connectionParams: authorization ? { Authorization: authorization } : {},
    ...opts,
  });
  clients.push(client);
  return client;
}

describe('minting', () => {
  it('an API key mints over REST: 201 with the token shown once, defaults filled in, audited', async () => {
    const res = await mint({ origins: [APP] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token: expect.stringMatching(/^wi_tok_[0-9a-f]{64}$/), origins: [APP], scopes: ['lookup', 'generate', 'read'], maxCredits: null });
    const ttl = (Date.parse(res.body.expiresAt) - Date.now()) / 1000;
    expect(ttl).toBeGreaterThan(800);
    expect(ttl).toBeLessThanOrEqual(900);
    const stored = await a.connection.collection('client_tokens').findOne({});
    expect(JSON.stringify(stored)).not.toContain(res.body.token);
    const entries = [];
    for await (const e of a.services.audit.exportForAccount(acct.accountId)) entries.push(e);
    expect(entries.find((e: any) => e.event === 'client_token.created')).toMatchObject({ keyId: acct.keyId, ip: '127.0.0.1', details: { origins: [APP] } });
  });

  it('refuses bad input with 400 naming the field and the rule', async () => {
    const cases: [unknown, string, RegExp][] = [
      [{}, 'origins', /origins is required/],
      [{ origins: [] }, 'origins', /1 to 10/],
      [{ origins: ['https://app.example.com/path'] }, 'origins[0]', /web origin/],
      [{ origins: ['https://App.example.com'] }, 'origins[0]', /web origin/],
      [{ origins: ['null'] }, 'origins[0]', /web origin/],
      [{ origins: Array.from({ length: 11 }, (_, i) => `https://a${i}.example`) }, 'origins', /1 to 10/],
      [{ origins: [APP], scopes: ['admin'] }, 'scopes', /lookup, generate, read/],
      [{ origins: [APP], scopes: [] }, 'scopes', /non-empty/],
      [{ origins: [APP], ttlSeconds: 59 }, 'ttlSeconds', /60 to 3600/],
      [{ origins: [APP], ttlSeconds: 3601 }, 'ttlSeconds', /60 to 3600/],
      [{ origins: [APP], ttlSeconds: '900' }, 'ttlSeconds', /60 to 3600/],
      [{ origins: [APP], maxCredits: 0 }, 'maxCredits', /positive integer/],
      [{ origins: [APP], maxCredits: 1.5 }, 'maxCredits', /positive integer/],
      [[APP], 'body', /JSON object/],
    ];
    for (const [body, field, rule] of cases) {
      const res = await mint(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', requestId: expect.any(String) });
      expect(res.body.error, JSON.stringify(body)).toMatch(rule);
      expect(res.body.error).toContain(field.replace(/\[\d+\]/, ''));
    }
  });

  it('mints over GraphQL with an API key; a token cannot mint (FORBIDDEN)', async () => {
    const minted = await gql(`mutation { createClientToken(origins: ["${APP}"], scopes: [read], ttlSeconds: 120, maxCredits: 3) { token expiresAt origins scopes maxCredits } }`, { key: acct.key });
    expect(minted.body.errors).toBeUndefined();
    expect(minted.body.data.createClientToken).toMatchObject({ token: expect.stringMatching(/^wi_tok_/), origins: [APP], scopes: ['read'], maxCredits: 3 });
    const token = minted.body.data.createClientToken.token;
    const again = await gql(`mutation { createClientToken(origins: ["${APP}"]) { token } }`, { token, origin: APP });
    expect(again.body.errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    const bad = await gql(`mutation { createClientToken(origins: ["ftp://x"]) { token } }`, { key: acct.key });
    expect(bad.body.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });
  });
});

describe('using a token', () => {
  it('works from its origin only; scopes refuse other operations and charge nothing', async () => {
    const { body } = await mint({ origins: [APP], scopes: ['read'] });
    const me = await gql('{ me { id credits } }', { token: body.token, origin: APP });
    expect(me.body.data.me).toEqual({ id: acct.accountId, credits: await balance() });

    const other = await gql('{ me { credits } }', { token: body.token, origin: 'http://127.0.0.1:5174' });
    expect(other.status).toBe(403);
    expect(other.body.errors[0]).toMatchObject({ message: 'Origin not allowed for this token', extensions: { code: 'FORBIDDEN' } });

    const before = await balance();
    const lookup = await gql('mutation { lookup(keyword: "tree") { credits } }', { token: body.token, origin: APP });
    expect(lookup.status).toBe(200);
    expect(lookup.body.errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' }, path: ['lookup'] });
    expect(await balance()).toBe(before);
  });

  it('a subscription outside the scopes is FORBIDDEN; reading needs `read`', async () => {
    const { body } = await mint({ origins: [APP], scopes: ['lookup'] });
    const created = await a.services.jobs.create({ accountId: acct.accountId, keyId: acct.keyId }, ['a heron']);
    const client = pageSocket(a, `Bearer ${body.token}`, APP, { retryAttempts: 0 });
    const outcome = await new Promise<any>((resolve) => {
      client.subscribe({ query: `subscription { jobStatus(jobId: "${created.jobId}") { status } }` }, { next: resolve, error: resolve, complete: () => resolve('completed') });
    });
    const errors = Array.isArray(outcome) ? outcome : outcome.errors;
    expect(errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN', reason: 'scope_not_allowed' } });
    const me = await gql('{ me { credits } }', { token: body.token, origin: APP });
    expect(me.body.errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', reason: 'scope_not_allowed' });
    const looked = await gql('mutation { lookup(keyword: "heron") { keyword } }', { token: body.token, origin: APP });
    expect(looked.body.data.lookup.keyword).toBe('heron');
  });

  it('holds maxCredits exactly under 20 concurrent charges', async () => {
    const { body } = await mint({ origins: [APP], maxCredits: 5 });
    const before = await balance();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => gql(`mutation { lookup(keyword: "word${i}") { credits } }`, { token: body.token, origin: APP, app: i % 2 ? a : b })),
    );
    const ok = results.filter((r) => r.body.data?.lookup);
    const refused = results.filter((r) => r.body.errors?.[0]?.extensions?.code === 'INSUFFICIENT_CREDITS');
    expect(ok).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const r of refused) expect(r.body.errors[0].message).toBe('Client token credit limit reached');
    expect(await balance()).toBe(before - 5);
    // A bad request costs no budget: still a 400-kind error, not the limit.
    const invalid = await gql('mutation { lookup(keyword: "  ") { credits } }', { token: body.token, origin: APP });
    expect(invalid.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it('CORS: preflight, readable token answers and refusals, unreadable API-key answers', async () => {
    const pre = await fetch(`${a.baseUrl}/graphql`, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(APP);
    expect(pre.headers.get('access-control-allow-methods')).toMatch(/GET.*POST|POST.*GET/);
    for (const h of ['authorization', 'content-type', 'idempotency-key', 'apollo-require-preflight']) expect(pre.headers.get('access-control-allow-headers')).toContain(h);
    expect(Number(pre.headers.get('access-control-max-age'))).toBeGreaterThanOrEqual(600);
    expect(pre.headers.get('vary')).toMatch(/Origin/);
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();

    const { body } = await mint({ origins: [APP] });
    const ok = await gql('{ me { credits } }', { token: body.token, origin: APP });
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP);
    expect(ok.headers.get('access-control-expose-headers')).toMatch(/x-request-id.*retry-after|retry-after.*x-request-id/);
    const expired = await gql('{ me { credits } }', { token: `wi_tok_${'1'.repeat(64)}`, origin: APP, accept: 'application/graphql-response+json, application/json;q=0.9' });
    expect(expired.status).toBe(401);
    expect(expired.headers.get('access-control-allow-origin')).toBe(APP);
    expect(expired.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
    expect(expired.body.errors[0]).toMatchObject({ message: 'Invalid client token', extensions: { code: 'UNAUTHENTICATED' } });
    const plain = await gql('{ me { credits } }', { token: `wi_tok_${'1'.repeat(64)}`, origin: APP });
    expect(plain.headers.get('content-type')).toMatch(/^application\/json/);

    const withKey = await gql('{ me { credits } }', { key: acct.key, origin: APP });
    expect(withKey.status).toBe(200);
    expect(withKey.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('endings', () => {
  it('a default graphql-ws client learns at once that its token was refused (no retries)', async () => {
    let connecting = 0;
    const client = pageSocket(a, `Bearer wi_tok_${'2'.repeat(64)}`, APP, { on: { connecting: () => void connecting++ } });
    const outcome = await new Promise<any>((resolve) => {
      client.subscribe({ query: '{ me { credits } }' }, { next: resolve, error: resolve, complete: () => undefined });
    });
    expect(outcome).toMatchObject({ code: 4401, reason: 'Invalid client token' });
    expect(connecting).toBe(1);
  });

  it('an API key on a socket a browser opened is refused (no CORS protects it there)', async () => {
    const client = pageSocket(a, `Bearer ${acct.key}`, APP, { retryAttempts: 0 });
    const outcome = await new Promise<any>((resolve) => {
      client.subscribe({ query: '{ me { credits } }' }, { next: resolve, error: resolve, complete: () => undefined });
    });
    expect(outcome).toMatchObject({ code: 4401, reason: 'API keys are for servers: a browser app needs a client token' });
  });

  it('expiry ends an open subscription with UNAUTHENTICATED and closes the socket; HTTP then says expired', async () => {
    const { body } = await mint({ origins: [APP] });
    const created = await a.services.jobs.create({ accountId: acct.accountId, keyId: acct.keyId }, ['a slow fox']);
    // The token's record is read at its first use; make it end soon before then.
    const hash = createHash('sha256').update(body.token).digest('hex');
    const changed = await a.connection.collection('client_tokens').updateOne({ hash }, { $set: { expiresAt: new Date(Date.now() + 1500) } });
    expect(changed.modifiedCount).toBe(1);
    let closedWith: number | undefined;
    const client = pageSocket(a, `Bearer ${body.token}`, APP, { retryAttempts: 0, lazy: false, onNonLazyError: () => undefined, on: { closed: (e) => void (closedWith = (e as { code: number }).code) } });
    const seen: any[] = [];
    const ended = new Promise<any>((resolve) => {
      client.subscribe({ query: `subscription { jobStatus(jobId: "${created.jobId}") { status } }` }, { next: (m) => seen.push(m), error: resolve, complete: () => resolve('completed') });
    });
    const error = await ended;
    expect(seen.length).toBeGreaterThan(0);
    expect(error).toEqual([expect.objectContaining({ message: 'Client token expired', extensions: expect.objectContaining({ code: 'UNAUTHENTICATED' }) })]);
    await until(() => closedWith !== undefined);
    expect(closedWith).toBe(4401);
    const after = await gql('{ me { credits } }', { token: body.token, origin: APP });
    expect(after.status).toBe(401);
    expect(after.body.errors[0].message).toBe('Client token expired');
  });

  it('deleting the key ends its tokens at once on every instance, open subscriptions included', async () => {
    const owner = await a.createAccountWithKey({ credits: 10 });
    const { body } = await mint({ origins: [APP] }, owner.key);
    const created = await a.services.jobs.create({ accountId: owner.accountId, keyId: owner.keyId }, ['an owl']);
    expect((await gql('{ me { credits } }', { token: body.token, origin: APP, app: b })).status).toBe(200);
    let closedWith: number | undefined;
    const client = pageSocket(b, `Bearer ${body.token}`, APP, { retryAttempts: 0, lazy: false, onNonLazyError: () => undefined, on: { closed: (e) => void (closedWith = (e as { code: number }).code) } });
    const seen: any[] = [];
    const ended = new Promise<any>((resolve) => {
      client.subscribe({ query: `subscription { jobStatus(jobId: "${created.jobId}") { status } }` }, { next: (m) => seen.push(m), error: resolve, complete: () => resolve('completed') });
    });
    await until(() => seen.length > 0);
    await a.services.keys.delete(owner.keyId, { actor: 'test', ip: null, host: 'test' });
    const error = await ended;
    expect(error).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'UNAUTHENTICATED' }) })]);
    await until(() => closedWith !== undefined);
    expect(closedWith).toBe(4401);
    for (const app of [a, b]) {
      const res = await gql('{ me { credits } }', { token: body.token, origin: APP, app });
      expect(res.status).toBe(401);
      expect(res.body.errors[0].message).toBe('Invalid client token');
    }
  });
});
