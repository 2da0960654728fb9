// REST door of webhook endpoints: happy, error and security cases, and the SSRF refusal at
// registration (an app that does not allow private URLs, with an injected resolver).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';

let t: TestApp;
let strict: TestApp;
let account: TestAccount;

beforeAll(async () => {
  t = await startTestApp({ IN_PROCESS_WORKER: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
  // The default policy; names resolve through a table instead of DNS (no traffic leaves the machine).
  strict = await startTestApp({
    IN_PROCESS_WORKER: 'false',
    deps: {
      webhookResolver: async (host) => ({ 'public.example.test': ['93.184.215.14'], 'rebind.example.test': ['127.0.0.1'], 'v6.example.test': ['::ffff:127.0.0.1'] })[host] ?? [],
    },
  });
  account = await t.createAccountWithKey();
});

afterAll(async () => {
  await strict?.close();
  await t?.close();
});

function call(app: TestApp, key: string | null, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${app.baseUrl}${path}`, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('POST /api/webhooks', () => {
  it('201 with id, url, events (all by default), a whsec_ secret of 32 random bytes, createdAt', async () => {
    const res = await call(t, account.key, 'POST', '/api/webhooks', { url: 'http://127.0.0.1:9/hooks' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['createdAt', 'events', 'id', 'secret', 'url']);
    expect(body.events).toEqual(['job.completed', 'job.failed', 'job.canceled', 'credits.low', 'key.expiring']);
    expect(body.url).toBe('http://127.0.0.1:9/hooks');
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(String(body.secret).slice(6), 'base64')).toHaveLength(32);
    expect(Number.isNaN(Date.parse(String(body.createdAt)))).toBe(false);
  });

  it('keeps the events asked for', async () => {
    const res = await call(t, account.key, 'POST', '/api/webhooks', { url: 'https://127.0.0.1/x', events: ['credits.low', 'job.failed'] });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { events: string[] }).events).toEqual(['job.failed', 'credits.low']);
  });

  it.each([
    [{}, 'url', /url must be a non-empty string/],
    [{ url: 42 }, 'url', /url must be a non-empty string/],
    [{ url: 'not a url' }, 'url', /absolute http or https URL/],
    [{ url: 'ftp://127.0.0.1/' }, 'url', /http or https/],
    [{ url: 'http://a:b@127.0.0.1/' }, 'url', /credentials/],
    [{ url: 'http://127.0.0.1/', events: [] }, 'events', /non-empty array/],
    [{ url: 'http://127.0.0.1/', events: 'job.completed' }, 'events', /non-empty array/],
    [{ url: 'http://127.0.0.1/', events: ['job.done'] }, 'events', /unknown event "job.done"/],
    [[], 'body', /JSON object/],
    ['null', 'body', /JSON object/],
  ])('400 for %j', async (body, _field, message) => {
    const res = await call(t, account.key, 'POST', '/api/webhooks', body);
    expect(res.status).toBe(400);
    const err = (await res.json()) as { error: string; code: string; requestId: string };
    expect(err.code).toBe('invalid_request');
    expect(err.error).toMatch(message);
    expect(err.requestId).toEqual(expect.any(String));
  });

  it('400 invalid_json and 415 like every JSON endpoint', async () => {
    expect((await call(t, account.key, 'POST', '/api/webhooks', '{"url":')).status).toBe(400);
    const res = await fetch(`${t.baseUrl}/api/webhooks`, { method: 'POST', headers: { authorization: `Bearer ${account.key}`, 'content-type': 'text/plain' }, body: 'x' });
    expect(res.status).toBe(415);
  });

  it('401 without a key; a client token is not an API key', async () => {
    expect((await call(t, null, 'POST', '/api/webhooks', { url: 'http://127.0.0.1/' })).status).toBe(401);
    const res = await call(t, 'wi_tok_abc', 'POST', '/api/webhooks', { url: 'http://127.0.0.1/' });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { code: string }).code).toBe('invalid_api_key_format');
  });
});

describe('SSRF: where an endpoint may point (WEBHOOK_ALLOW_PRIVATE_URLS unset)', () => {
  let key: string;
  beforeAll(async () => {
    key = (await strict.createAccountWithKey()).key;
  });

  it.each([
    'http://127.0.0.1/',
    'http://localhost:8080/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.0.10/',
    'http://100.64.1.1/',
    'http://169.254.169.254/latest/meta-data/',
    'http://[fd00::1]/',
    'http://[fe80::1]/',
    'http://0.0.0.0/',
    'http://224.0.0.1/',
    'https://rebind.example.test/hooks',
    'https://v6.example.test/hooks',
  ])('400 for %s', async (url) => {
    const res = await call(strict, key, 'POST', '/api/webhooks', { url });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/^url (must not point to a loopback|host .* does not resolve)/);
  });

  it('a public name is accepted', async () => {
    expect((await call(strict, key, 'POST', '/api/webhooks', { url: 'https://public.example.test/hooks' })).status).toBe(201);
  });
});

describe('GET and DELETE /api/webhooks', () => {
  it('lists the account’s endpoints without secrets; deletes with 204; 404 for unknown and foreign ids', async () => {
    const mine = await t.createAccountWithKey();
    const other = await t.createAccountWithKey();
    const created = (await (await call(t, mine.key, 'POST', '/api/webhooks', { url: 'http://127.0.0.1:1/a' })).json()) as { id: string };
    await call(t, other.key, 'POST', '/api/webhooks', { url: 'http://127.0.0.1:1/b' });

    const list = await call(t, mine.key, 'GET', '/api/webhooks');
    expect(list.status).toBe(200);
    const { webhooks } = (await list.json()) as { webhooks: Record<string, unknown>[] };
    expect(webhooks).toEqual([{ id: created.id, url: 'http://127.0.0.1:1/a', events: expect.any(Array), createdAt: expect.any(String), disabledAt: null }]);
    expect(JSON.stringify(webhooks)).not.toContain('whsec_');

    const foreign = await call(t, other.key, 'DELETE', `/api/webhooks/${created.id}`);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ code: 'webhook_not_found', error: 'Webhook not found' });
    expect((await call(t, mine.key, 'DELETE', '/api/webhooks/ep_nope')).status).toBe(404);

    expect((await call(t, mine.key, 'DELETE', `/api/webhooks/${created.id}`)).status).toBe(204);
    expect((await call(t, mine.key, 'DELETE', `/api/webhooks/${created.id}`)).status).toBe(404);
    expect(((await (await call(t, mine.key, 'GET', '/api/webhooks')).json()) as { webhooks: unknown[] }).webhooks).toEqual([]);
  });
});
