/**
 * One security suite for every authenticated entry point, generated from the routes buildApp
 * registers: a route that needs an API key gets every refusal of the contract, a console route gets
 * every refusal of a session, and any other route must be listed as public here. A new route cannot
 * skip this suite: an unlisted, unauthenticated route fails it.
 */
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createConsoleUser, sameOrigin, signIn } from '../helpers/console.js';

/** Routes anyone may call, and why. */
const PUBLIC = new Map<string, string>([
  ['GET /', 'where things are: a browser is sent to the console, an API client gets an index of paths (no data)'],
  ['GET /healthz', 'liveness probe'],
  ['GET /readyz', 'readiness probe'],
  ['OPTIONS /graphql', 'CORS preflight (carries no credential; the answer to the request decides who may read it)'],
  ['GET /api/playground/images/:jobId/images/:index', 'the signed URL is the authority'],
  ['POST /api/stripe/webhook', "Stripe's events: the Stripe-Signature over the raw body is the authority (test/billing/stripe-webhook.test.ts)"],
  ['GET /console/assets/:file', 'stylesheet and script'],
  ['GET /console/sign-in', 'the sign-in form'],
  ['POST /console/sign-in', 'signing in'],
  ['POST /console/sign-out', 'signing out works without a session too'],
  ['GET /console/invitations/accept', 'an invitation link: the token is the authority (a signed-in user with its email joins)'],
  ['POST /console/invitations/accept', 'a new person sets a password and joins: the token is the authority'],
  ['GET /console/sign-up', 'the sign-up form (SIGNUP=open)'],
  ['POST /console/sign-up', 'signing up: only sends an email, the same answer for any address'],
  ['GET /console/verify-email', 'the emailed verification link: its single-use token, with the sign-up browser\'s cookie, is the authority'],
  ['POST /console/verify-email', 'the verification link opened in another browser: its token with the sign-up password (under the sign-in throttle)'],
  ['GET /console/forgot-password', 'the forgot-password form'],
  ['POST /console/forgot-password', 'asking for a reset link: the same answer for any address'],
  ['GET /console/reset-password', 'the emailed reset link: its single-use token is the authority'],
  ['POST /console/reset-password', 'setting a new password with the reset link'],
  ['GET /console/sign-in/verify', 'the code step of a sign-in with two-factor authentication (its challenge cookie opens nothing else)'],
  ['POST /console/sign-in/verify', 'the code after the password: the single-use challenge cookie is the authority'],
  ['GET /openapi.json', 'the REST API\'s OpenAPI document: describes the API, holds nothing of anyone\'s'],
  ['GET /docs', 'the API reference page (Swagger UI, from node_modules)'],
  ['GET /docs/json', 'the same document, where Swagger UI fetches it'],
  ['GET /docs/yaml', 'the same document in YAML'],
  ['GET /docs/static/index.html', 'redirects to /docs'],
  ['GET /docs/static/swagger-initializer.js', "the reference page's start-up script"],
  ['GET /docs/static/*', "Swagger UI's own files"],
  ['GET /docs/static/theme/contrast.css', "the reference page's contrast fixes"],
]);

const routes: { method: string; url: string; auth: string | undefined }[] = [];
let t: TestApp;
let cookie: string;
let deletedKey: string;
let activeKey: string;
let token: string;
const APP_ORIGIN = 'http://127.0.0.1:5173';
const isApiRoute = (r: { auth: string | undefined }) => r.auth === 'apiKey' || r.auth === 'apiKeyOrToken';

beforeAll(async () => {
  t = await startTestApp({
    onRoute: (r) => {
      for (const method of [r.method].flat()) if (method !== 'HEAD') routes.push({ method, url: r.url, auth: r.auth });
    },
  });
  const u = await createConsoleUser(t);
  cookie = (await signIn(t, u.email, u.password)).cookie!;
  activeKey = u.key;
  const doomed = await t.createAccountWithKey();
  await t.services.keys.delete(doomed.keyId, { actor: 'test', ip: null, host: 'test' });
  deletedKey = doomed.key;
  const minter = await t.createAccountWithKey();
  token = (await t.services.clientTokens.mint({ accountId: minter.accountId, keyId: minter.keyId }, { origins: [APP_ORIGIN] }, { actor: 'test', ip: null, host: 'test' })).token;
});
afterAll(async () => {
  await t?.close();
});

const fill = (url: string) => url.replace(':jobId', '00000000-0000-4000-8000-000000000000').replace(/:\w+/g, 'x');

function call(route: { method: string; url: string }, headers: Record<string, string>) {
  const body = route.method === 'GET' ? undefined : '{}';
  return fetch(`${t.baseUrl}${fill(route.url)}`, {
    method: route.method,
    redirect: 'manual',
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body,
  });
}

describe('every route is authenticated or listed as public', () => {
  it('found the doors', () => {
    expect(routes.filter((r) => r.auth === 'apiKey').map((r) => `${r.method} ${r.url}`)).toEqual(
      expect.arrayContaining(['POST /api/playground/query', 'POST /api/playground/images', 'GET /api/playground/images/:jobId', 'POST /api/playground/images/:jobId/cancel', 'POST /api/client-tokens']),
    );
    // /graphql alone also takes client tokens.
    expect(routes.filter((r) => r.auth === 'apiKeyOrToken').map((r) => `${r.method} ${r.url}`).sort()).toEqual(['GET /graphql', 'POST /graphql']);
    expect(routes.filter((r) => r.auth === 'session').length).toBeGreaterThan(10);
  });

  it('no other route is open', () => {
    const open = routes.filter((r) => !isApiRoute(r) && r.auth !== 'session' && !PUBLIC.has(`${r.method} ${r.url}`));
    expect(open, 'routes without authentication that are not listed as public').toEqual([]);
  });
});

describe('API-key doors (REST and GraphQL over HTTP)', () => {
  const refusals: [string, () => Record<string, string>, string][] = [
    ['no Authorization header', () => ({}), 'missing_authorization'],
    ['not Bearer', () => ({ authorization: 'Basic dXNlcjpwYXNz' }), 'missing_authorization'],
    ['a malformed key', () => ({ authorization: 'Bearer wi_live_123' }), 'invalid_api_key_format'],
    ['an unknown key', () => ({ authorization: `Bearer wi_live_${'0'.repeat(64)}` }), 'invalid_api_key'],
    ['a deleted key', () => ({ authorization: `Bearer ${deletedKey}` }), 'invalid_api_key'],
    ['a console session cookie alone', () => ({ cookie }), 'missing_authorization'],
  ];
  for (const [what, headers, code] of refusals) {
    it(`${what} → 401 ${code} on every API route`, async () => {
      for (const route of routes.filter(isApiRoute)) {
        const res = await call(route, headers());
        expect(res.status, `${route.method} ${route.url}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        const body = (await res.json()) as any;
        const got = route.url === '/graphql' ? body.errors[0].extensions.code : body.code;
        expect(got, `${route.method} ${route.url}`).toBe(route.url === '/graphql' ? 'UNAUTHENTICATED' : code);
      }
    });
  }
});

describe('client tokens', () => {
  it('open /graphql only: every REST route answers a valid token with 401 invalid_api_key_format', async () => {
    for (const route of routes.filter((r) => r.auth === 'apiKey')) {
      const res = await call(route, { authorization: `Bearer ${token}`, origin: APP_ORIGIN });
      expect(res.status, `${route.method} ${route.url}`).toBe(401);
      expect(((await res.json()) as any).code, `${route.method} ${route.url}`).toBe('invalid_api_key_format');
    }
  });

  it('an unknown or malformed token, or a token from another origin, is refused on every token route', async () => {
    const cases: [Record<string, string>, number, string][] = [
      [{ authorization: `Bearer wi_tok_${'0'.repeat(64)}`, origin: APP_ORIGIN }, 401, 'UNAUTHENTICATED'],
      [{ authorization: 'Bearer wi_tok_short', origin: APP_ORIGIN }, 401, 'UNAUTHENTICATED'],
      [{ authorization: `Bearer ${token}`, origin: 'https://evil.example' }, 403, 'FORBIDDEN'],
      [{ authorization: `Bearer ${token}` }, 403, 'FORBIDDEN'],
    ];
    for (const route of routes.filter((r) => r.auth === 'apiKeyOrToken')) {
      for (const [headers, status, code] of cases) {
        const res = await call(route, { 'apollo-require-preflight': '1', ...headers });
        expect(res.status, `${route.method} ${route.url} ${JSON.stringify(headers)}`).toBe(status);
        expect(((await res.json()) as any).errors[0].extensions.code).toBe(code);
      }
    }
  });
});

describe('GraphQL over WebSocket', () => {
  it('closes with 4401 for a missing, malformed, unknown or deleted key, and ignores cookies', async () => {
    for (const params of [{}, { Authorization: 'Bearer nope' }, { Authorization: `Bearer wi_live_${'0'.repeat(64)}` }, { Authorization: `Bearer ${deletedKey}` }]) {
      const closed = await new Promise<number>((resolve) => {
        const client = createClient({
          url: `${t.baseUrl.replace('http', 'ws')}/graphql`,
          webSocketImpl: class extends WebSocket {
            constructor(url: string, protocols: string[]) {
              super(url, protocols, { headers: { cookie } });
            }
          },
          connectionParams: params,
          retryAttempts: 0,
          lazy: false,
          on: { closed: (e) => resolve((e as { code: number }).code) },
          onNonLazyError: () => {},
        });
        void client;
      });
      expect(closed, JSON.stringify(params)).toBe(4401);
    }
  });
});

describe('console doors', () => {
  const refusals: [string, () => Record<string, string>][] = [
    ['no cookie', () => ({})],
    ['a garbage cookie', () => ({ cookie: 'console_session=garbage' })],
    ['a valid API key instead of a session', () => ({ authorization: `Bearer ${activeKey}` })],
  ];
  for (const [what, headers] of refusals) {
    it(`${what}: every console route refuses (pages redirect to sign-in, JSON gets 401)`, async () => {
      for (const route of routes.filter((r) => r.auth === 'session')) {
        const page = await call(route, { ...sameOrigin(t), ...headers() });
        expect(page.status, `${route.method} ${route.url}`).toBe(303);
        expect(page.headers.get('location')).toMatch(/^\/console\/sign-in/);
        const json = await call(route, { ...sameOrigin(t), accept: 'application/json', ...headers() });
        expect(json.status, `${route.method} ${route.url}`).toBe(401);
        expect(await json.json()).toMatchObject({ code: 'not_signed_in', requestId: expect.any(String) });
      }
    });
  }

  it('a cross-site request is refused on every state-changing console route, signed in or not', async () => {
    for (const route of routes.filter((r) => r.url.startsWith('/console') && r.method !== 'GET')) {
      const res = await call(route, { cookie, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example', accept: 'application/json' });
      expect(res.status, `${route.method} ${route.url}`).toBe(403);
      expect(await res.json()).toMatchObject({ code: 'cross_site_request' });
    }
  });
});
