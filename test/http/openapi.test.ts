/**
 * The OpenAPI document (`GET /openapi.json`) and the API reference (`GET /docs`): the document is valid
 * OpenAPI 3.1, lists every REST route the app registers (generated from the routes, like the security
 * suite) with its methods, security and errors, and real answers (successes and every error status
 * reached here) match its schemas.
 */
import { validate, compileErrors } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRestPath } from '../../src/http/openapi/plugin.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { fetchDocument, openApiPath, responseChecker, type OpenApiDocument, type ResponseCheck } from '../helpers/openapi.js';

const routes: { method: string; url: string; auth: string | undefined }[] = [];
let t: TestApp;
let doc: OpenApiDocument;
let check: ResponseCheck;
let acct: TestAccount;

beforeAll(async () => {
  t = await startTestApp({
    onRoute: (r) => {
      for (const method of [r.method].flat()) if (method !== 'HEAD') routes.push({ method, url: r.url, auth: r.auth });
    },
  });
  doc = await fetchDocument(t.baseUrl);
  check = responseChecker(doc);
  acct = await t.createAccountWithKey({ credits: 5 });
});
afterAll(async () => {
  await t?.close();
});

const restRoutes = () => routes.filter((r) => isRestPath(r.url));
const json = (key: string | null, body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

describe('the document', () => {
  it('is valid OpenAPI 3.1 (@readme/openapi-parser)', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('declares the bearer scheme and no servers unless PUBLIC_BASE_URL is set', async () => {
    expect(doc.components?.securitySchemes).toEqual({ apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }) });
    expect(doc.servers ?? []).toEqual([]);
    const other = await startTestApp({ PUBLIC_BASE_URL: 'https://api.example.com/' });
    try {
      expect((await fetchDocument(other.baseUrl)).servers).toEqual([{ url: 'https://api.example.com' }]);
    } finally {
      await other.close();
    }
  });

  it('lists every REST route the app registers, with its methods, and nothing else', () => {
    const registered = restRoutes().map((r) => `${r.method} ${openApiPath(r.url)}`);
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    expect(registered.length).toBeGreaterThanOrEqual(7);
    expect(documented.sort()).toEqual([...new Set(registered)].sort());
    expect(Object.keys(doc.paths).some((p) => p.startsWith('/graphql') || p.startsWith('/console') || p.startsWith('/docs'))).toBe(false);
  });

  it('gives each route its security, a success body and the error shape with the codes of each status', () => {
    for (const route of restRoutes()) {
      const op = doc.paths[openApiPath(route.url)]![route.method.toLowerCase()]!;
      const where = `${route.method} ${route.url}`;
      expect(op.security, where).toEqual(route.auth === 'apiKey' ? [{ apiKey: [] }] : []);
      const statuses = Object.keys(op.responses).map(Number);
      expect(statuses.some((s) => s >= 200 && s < 300), where).toBe(true);
      if (route.auth === 'apiKey') expect(statuses, where).toEqual(expect.arrayContaining([401, 429]));
      for (const status of statuses.filter((s) => s >= 400)) {
        const schema = JSON.stringify(op.responses[status]!.content?.['application/json']?.schema);
        expect(schema, `${where} ${status}`).toMatch(/"required":\["error","code","requestId"\]/);
      }
    }
  });

  it('declares the Idempotency-Key header on the charging routes', () => {
    for (const path of ['/api/playground/query', '/api/playground/images']) {
      expect(doc.paths[path]!.post!.parameters).toContainEqual(expect.objectContaining({ in: 'header', name: 'idempotency-key', required: false }));
    }
  });

  it('states the limits the server applies (from config)', () => {
    const body = (path: string) => JSON.stringify(doc.paths[path]!.post!.requestBody!.content['application/json']!.schema);
    expect(body('/api/playground/query')).toContain(`"maxLength":${t.config.MAX_KEYWORD_LENGTH}`);
    expect(body('/api/playground/images')).toContain(`"maxItems":${t.config.MAX_PROMPTS}`);
    expect(body('/api/playground/images')).toContain(`"maxLength":${t.config.MAX_PROMPT_LENGTH}`);
  });

  it('is public and readable from any origin', async () => {
    const res = await fetch(`${t.baseUrl}/openapi.json`, { headers: { origin: 'https://editor.example' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('real answers match the document', () => {
  it('POST /api/playground/query: 200, 400s, 401, 402, 413, 415, 422', async () => {
    const url = `${t.baseUrl}/api/playground/query`;
    const path = '/api/playground/query';
    expect(await check('POST', path, await fetch(url, json(acct.key, { keyword: 'tree' })))).toMatchObject({ keyword: 'tree' });
    for (const bad of [{}, { keyword: 5 }, { keyword: ' ' }, { keyword: 'x'.repeat(101) }, [1]]) {
      expect(await check('POST', path, await fetch(url, json(acct.key, bad)))).toMatchObject({ code: 'invalid_request' });
    }
    expect(await check('POST', path, await fetch(url, json(acct.key, '{"keyword":')))).toMatchObject({ code: 'invalid_json' });
    expect(await check('POST', path, await fetch(url, json(acct.key, { keyword: 'x' }, { 'idempotency-key': 'bad key' })))).toMatchObject({
      code: 'invalid_request',
      error: 'Idempotency-Key must be 1 to 255 printable ASCII characters',
    });
    expect(await check('POST', path, await fetch(url, json(null, { keyword: 'x' })))).toMatchObject({ code: 'missing_authorization' });
    expect(await check('POST', path, await fetch(url, json('wi_live_1', { keyword: 'x' })))).toMatchObject({ code: 'invalid_api_key_format' });
    const poor = await t.createAccountWithKey({ credits: 0 });
    expect(await check('POST', path, await fetch(url, json(poor.key, { keyword: 'x' })))).toMatchObject({ code: 'insufficient_credits' });
    expect(await check('POST', path, await fetch(url, json(acct.key, { keyword: 'x'.repeat(t.config.BODY_LIMIT_BYTES) })))).toMatchObject({ code: 'payload_too_large' });
    expect(await check('POST', path, await fetch(url, { ...json(acct.key, 'keyword=x'), headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'text/plain' } }))).toMatchObject({
      code: 'unsupported_media_type',
    });
    await check('POST', path, await fetch(url, json(acct.key, { keyword: 'oak' }, { 'idempotency-key': 'k-1' })));
    expect(await check('POST', path, await fetch(url, json(acct.key, { keyword: 'elm' }, { 'idempotency-key': 'k-1' })))).toMatchObject({ code: 'idempotency_key_reused' });
  });

  it('image jobs: 201, 400, 402, then GET 200 and 404, cancel 200 and 404, and the signed URL route 403', async () => {
    const url = `${t.baseUrl}/api/playground/images`;
    const created = (await check('POST', '/api/playground/images', await fetch(url, json(acct.key, { prompts: ['a fox', 'a moth'] })))) as { jobId: string };
    for (const bad of [{}, { prompts: [] }, { prompts: [5] }, { prompts: Array(51).fill('x') }]) {
      expect(await check('POST', '/api/playground/images', await fetch(url, json(acct.key, bad)))).toMatchObject({ code: 'invalid_request' });
    }
    expect(await check('POST', '/api/playground/images', await fetch(url, json(acct.key, { prompts: Array(20).fill('x') })))).toMatchObject({ code: 'insufficient_credits' });
    const auth = { authorization: `Bearer ${acct.key}` };
    const job = await check('GET', '/api/playground/images/{jobId}', await fetch(`${url}/${created.jobId}`, { headers: auth }));
    expect(job).toMatchObject({ jobId: created.jobId, totalImages: 2 });
    expect(await check('GET', '/api/playground/images/{jobId}', await fetch(`${url}/not-a-job`, { headers: auth }))).toMatchObject({ code: 'job_not_found' });
    expect(await check('GET', '/api/playground/images/{jobId}', await fetch(`${url}/${created.jobId}`))).toMatchObject({ code: 'missing_authorization' });
    const cancel = (jobId: string) => fetch(`${url}/${jobId}/cancel`, { method: 'POST', headers: auth });
    expect(await check('POST', '/api/playground/images/{jobId}/cancel', await cancel(created.jobId))).toMatchObject({ jobId: created.jobId });
    expect(await check('POST', '/api/playground/images/{jobId}/cancel', await cancel(created.jobId))).toMatchObject({ status: 'canceled' });
    expect(await check('POST', '/api/playground/images/{jobId}/cancel', await cancel('not-a-job'))).toMatchObject({ code: 'job_not_found' });
    const file = await fetch(`${url}/${created.jobId}/images/0?expires=1&sig=x`);
    expect(await check('GET', '/api/playground/images/{jobId}/images/{index}', file)).toMatchObject({ code: expect.stringMatching(/^(invalid_signature|image_not_found)$/) });
  });

  it('POST /api/client-tokens: 201, 400, 401', async () => {
    const url = `${t.baseUrl}/api/client-tokens`;
    expect(await check('POST', '/api/client-tokens', await fetch(url, json(acct.key, { origins: ['https://app.example.com'], maxCredits: 2 })))).toMatchObject({ scopes: ['lookup', 'generate', 'read'] });
    for (const bad of [{}, { origins: ['https://app.example.com/x'] }, { origins: ['https://a.example'], scopes: ['admin'] }, { origins: ['https://a.example'], ttlSeconds: 5 }, 'null']) {
      expect(await check('POST', '/api/client-tokens', await fetch(url, json(acct.key, bad)))).toMatchObject({ code: 'invalid_request' });
    }
    expect(await check('POST', '/api/client-tokens', await fetch(url, json(`wi_live_${'0'.repeat(64)}`, { origins: ['https://a.example'] })))).toMatchObject({ code: 'invalid_api_key' });
  });

  it('webhooks: POST 201 or 400, GET 200, DELETE 204 and 404', async () => {
    const url = `${t.baseUrl}/api/webhooks`;
    const auth = { authorization: `Bearer ${acct.key}` };
    expect(await check('POST', '/api/webhooks', await fetch(url, json(acct.key, { events: [] })))).toMatchObject({ code: 'invalid_request' });
    const created = (await check('POST', '/api/webhooks', await fetch(url, json(acct.key, { url: 'http://127.0.0.1:9/hook' })))) as { id?: string };
    expect(await check('GET', '/api/webhooks', await fetch(url, { headers: auth }))).toMatchObject({ webhooks: expect.any(Array) });
    if (created.id) await check('DELETE', '/api/webhooks/{id}', await fetch(`${url}/${created.id}`, { method: 'DELETE', headers: auth }));
    expect(await check('DELETE', '/api/webhooks/{id}', await fetch(`${url}/ep_nope`, { method: 'DELETE', headers: auth }))).toMatchObject({ code: 'webhook_not_found' });
  });

  it('GET /: the index for an API client, 303 to the console for a browser', async () => {
    expect(await check('GET', '/', await fetch(`${t.baseUrl}/`))).toMatchObject({ openapi: '/openapi.json', docs: '/docs' });
    await check('GET', '/', await fetch(`${t.baseUrl}/`, { headers: { accept: 'text/html' }, redirect: 'manual' }));
  });

  it('probes: /healthz and /readyz', async () => {
    expect(await check('GET', '/healthz', await fetch(`${t.baseUrl}/healthz`))).toEqual({ status: 'ok' });
    expect(await check('GET', '/readyz', await fetch(`${t.baseUrl}/readyz`))).toEqual({ status: 'ready' });
  });
});

describe('GET /docs', () => {
  it('serves the reference page under a strict CSP, with its assets from this origin', async () => {
    const res = await fetch(`${t.baseUrl}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-');
    const html = await res.text();
    // Nothing inline for the CSP to refuse: every script has a src, no style element or attribute.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(html).not.toMatch(/<style|\sstyle=/i);
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(4);
    for (const asset of assets) {
      expect(asset, 'no request leaves the origin').toMatch(/^\/docs\//);
      const file = await fetch(`${t.baseUrl}${asset}`);
      expect(file.status, asset).toBe(200);
      expect(file.headers.get('content-security-policy'), asset).toBe(csp);
      expect((await file.arrayBuffer()).byteLength, asset).toBeGreaterThan(0);
    }
  });

  it('Swagger UI reads the same document at /docs/json', async () => {
    const res = await fetch(`${t.baseUrl}/docs/json`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(doc);
  });
});
