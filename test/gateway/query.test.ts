import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccountWithKey, startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';

/** POST /api/playground/query over real HTTP on the test database, with the real WordNet provider. */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

async function query(body: unknown, headers: Record<string, string> = {}, raw?: string) {
  const res = await fetch(`${t.baseUrl}/api/playground/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: raw ?? JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, body: json, headers: res.headers };
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

async function balance(accountId: string): Promise<number | null> {
  const [b] = await t.services.credits.balances([accountId]);
  return b!;
}

describe('happy path', () => {
  it('returns the trimmed keyword, a WordNet definition and the balance after one credit', async () => {
    const a = await createAccountWithKey({ credits: 5 });
    const res = await query({ keyword: '  serendipity ' }, auth(a.key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ keyword: 'serendipity', definition: expect.stringContaining('good luck in making unexpected and fortunate discoveries'), credits: 4 });
    expect(await balance(a.accountId)).toBe(4);
  });

  it('finds the lemma of an inflected word', async () => {
    const a = await createAccountWithKey({ credits: 5 });
    const res = await query({ keyword: 'Running' }, auth(a.key));
    expect(res.status).toBe(200);
    expect(res.body.keyword).toBe('Running');
    expect(res.body.definition).toMatch(/^running\n\(noun\) 1\. /);
  });

  it('charges a word the dictionary does not know and says so', async () => {
    const a = await createAccountWithKey({ credits: 2 });
    const res = await query({ keyword: 'qzxvbnmw' }, auth(a.key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ keyword: 'qzxvbnmw', definition: 'No definition found for "qzxvbnmw".', credits: 1 });
  });

  it('accepts a keyword of exactly the maximum length', async () => {
    const a = await createAccountWithKey({ credits: 1 });
    const res = await query({ keyword: 'a'.repeat(100) }, auth(a.key));
    expect(res.status).toBe(200);
    expect(res.body.credits).toBe(0);
  });

  it('echoes a client request id and tags errors with it', async () => {
    const res = await query({ keyword: 'x' }, { 'x-request-id': 'trace-123' });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBe('trace-123');
    expect(res.body.requestId).toBe('trace-123');
  });
});

describe('authentication (401)', () => {
  let a: TestAccount;
  beforeAll(async () => {
    a = await createAccountWithKey({ credits: 100 });
  });

  const missing = { error: 'Missing or invalid Authorization header', code: 'missing_authorization' };
  const format = { error: 'Invalid API key format', code: 'invalid_api_key_format' };
  const invalidKey = { error: 'Invalid API key', code: 'invalid_api_key' };

  it.each([
    ['no header', {}, missing],
    ['empty header', { authorization: '' }, missing],
    ['Basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, missing],
    ['Bearer without token', { authorization: 'Bearer' }, missing],
    ['Bearer with two tokens', { authorization: 'Bearer a b' }, missing],
    ['a key without Bearer', { authorization: 'wi_live_' + 'a'.repeat(64) }, missing],
    ['short key', { authorization: 'Bearer wi_live_' + 'a'.repeat(63) }, format],
    ['long key', { authorization: 'Bearer wi_live_' + 'a'.repeat(65) }, format],
    ['uppercase hex', { authorization: 'Bearer wi_live_' + 'A'.repeat(64) }, format],
    ['other prefix', { authorization: 'Bearer wi_test_' + 'a'.repeat(64) }, format],
    ['non-hex', { authorization: 'Bearer wi_live_' + 'g'.repeat(64) }, format],
    ['unknown well-formed key', { authorization: 'Bearer wi_live_' + '0'.repeat(64) }, invalidKey],
  ])('%s', async (_name, headers, expected) => {
    const res = await query({ keyword: 'cat' }, headers as Record<string, string>);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ ...expected, requestId: expect.any(String) });
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('a deleted key is refused by the very next request, and nothing is charged', async () => {
    const b = await createAccountWithKey({ credits: 3 });
    expect((await query({ keyword: 'cat' }, auth(b.key))).status).toBe(200);
    await t.services.keys.delete(b.keyId, { actor: 'test', ip: '127.0.0.1', host: 'h' });
    const res = await query({ keyword: 'cat' }, auth(b.key));
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('Invalid API key');
    expect(await balance(b.accountId)).toBe(2);
  });

  it('a key stays valid for its own account only', async () => {
    const other = await createAccountWithKey({ credits: 7 });
    const res = await query({ keyword: 'cat' }, auth(a.key));
    expect(res.status).toBe(200);
    expect(await balance(other.accountId)).toBe(7);
  });
});

describe('validation (400) and body handling', () => {
  let a: TestAccount;
  beforeAll(async () => {
    a = await createAccountWithKey({ credits: 1 });
  });

  it.each([
    ['missing', {}, 'keyword is required'],
    ['null', { keyword: null }, 'keyword is required'],
    ['a number', { keyword: 42 }, 'keyword must be a string'],
    ['an array', { keyword: ['cat'] }, 'keyword must be a string'],
    ['an object', { keyword: { $gt: '' } }, 'keyword must be a string'],
    ['empty', { keyword: '' }, 'keyword must not be empty'],
    ['whitespace', { keyword: ' \t\n ' }, 'keyword must not be empty'],
    ['too long', { keyword: 'a'.repeat(101) }, 'keyword must be at most 100 characters (got 101)'],
  ])('keyword %s → 400 naming the field and the rule, nothing charged', async (_name, body, message) => {
    const res = await query(body, auth(a.key));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: message, code: 'invalid_request', requestId: expect.any(String) });
    expect(await balance(a.accountId)).toBe(1);
  });

  it.each([
    ['an array', [1, 2]],
    ['a string', 'cat'],
    ['a number', 7],
    ['null', null],
  ])('a JSON body that is %s → 400', async (_name, body) => {
    const res = await query(body, auth(a.key));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'body must be a JSON object with a keyword field', code: 'invalid_request', requestId: expect.any(String) });
  });

  it('a body that is not JSON → 400 invalid_json', async () => {
    const res = await query(undefined, auth(a.key), '{"keyword": ');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'Request body is not valid JSON', code: 'invalid_json', requestId: expect.any(String) });
  });

  it('an empty body with a JSON content type → 400 invalid_json', async () => {
    const res = await query(undefined, auth(a.key), '');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  it('no body and no content type reads as a missing keyword', async () => {
    const res = await fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: auth(a.key) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toBe('keyword is required');
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])('content type %s → 415', async (type) => {
    const res = await query(undefined, { ...auth(a.key), 'content-type': type }, 'keyword=cat');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({ error: 'Content-Type must be application/json', code: 'unsupported_media_type', requestId: expect.any(String) });
  });

  it('a body over the size limit → 413', async () => {
    const res = await query({ keyword: 'x'.repeat(t.config.BODY_LIMIT_BYTES + 10) }, auth(a.key));
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: 'Request body too large', code: 'payload_too_large', requestId: expect.any(String) });
  });

  it('accepts application/json with a charset', async () => {
    const b = await createAccountWithKey({ credits: 1 });
    const res = await query(undefined, { ...auth(b.key), 'content-type': 'application/json; charset=utf-8' }, '{"keyword":"tree"}');
    expect(res.status).toBe(200);
  });
});

describe('check order: 401 → 400 → 402 → work', () => {
  it('authentication comes before a bad body, a bad content type and an oversized body', async () => {
    expect((await query(undefined, {}, '{not json')).status).toBe(401);
    expect((await query(undefined, { 'content-type': 'text/plain' }, 'cat')).status).toBe(401);
    expect((await query({ keyword: 'x'.repeat(t.config.BODY_LIMIT_BYTES + 10) }, { authorization: 'Bearer nope' })).body.code).toBe('invalid_api_key_format');
    expect((await query({ keyword: 5 }, { authorization: 'Bearer wi_live_' + 'f'.repeat(64) })).body.code).toBe('invalid_api_key');
  });

  it('validation comes before credits: an empty account with a bad keyword gets 400', async () => {
    const a = await createAccountWithKey({ credits: 0 });
    const res = await query({ keyword: '' }, auth(a.key));
    expect(res.status).toBe(400);
  });

  it('402 Insufficient credits charges nothing and does no work', async () => {
    const a = await createAccountWithKey({ credits: 0 });
    const res = await query({ keyword: 'cat' }, auth(a.key));
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ error: 'Insufficient credits', code: 'insufficient_credits', requestId: expect.any(String) });
    expect(await balance(a.accountId)).toBe(0);
  });
});

describe('concurrency', () => {
  it('120 concurrent lookups against 40 credits: exactly 40 succeed, with 40 distinct balances', async () => {
    const a = await createAccountWithKey({ credits: 40 });
    const results = await Promise.all(Array.from({ length: 120 }, (_, i) => query({ keyword: i % 2 ? 'cat' : 'dog' }, auth(a.key))));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok).toHaveLength(40);
    expect(refused).toHaveLength(80);
    const balances = new Set(ok.map((r) => r.body.credits));
    expect(balances.size).toBe(40);
    expect([...balances].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(await balance(a.accountId)).toBe(0);
  });
});

describe('routing', () => {
  it('unknown routes → 404 in the error shape', async () => {
    const res = await fetch(`${t.baseUrl}/api/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'Route not found', code: 'route_not_found', requestId: expect.any(String) });
  });

  it('GET on the lookup route → 404, not a 500', async () => {
    const res = await fetch(`${t.baseUrl}/api/playground/query`);
    expect(res.status).toBe(404);
  });

  it('healthz and readyz answer', async () => {
    expect(await (await fetch(`${t.baseUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${t.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });
});

describe('nothing a client sends produces a 500', () => {
  it('random headers and bodies', async () => {
    const a = await createAccountWithKey({ credits: 1000 });
    const bodies: (string | undefined)[] = [
      '{"keyword":"\\u0000"}',
      '{"keyword":"\\ud800"}',
      '{"keyword":"🐈🐈🐈"}',
      '{"__proto__":{"keyword":"x"}}',
      '{"constructor":{"prototype":{"x":1}},"keyword":"cat"}',
      '{"keyword":"cat","keyword":"dog"}',
      '[]',
      '""',
      'true',
      '1e999',
      '{"keyword":' + '['.repeat(5000) + ']'.repeat(5000) + '}',
      '\u0000',
      '{"keyword":"a\\nb"}',
      '{"keyword":"../../etc/passwd"}',
      '{"keyword":"$where"}',
      undefined,
    ];
    const types = ['application/json', 'application/json; charset=latin1', 'APPLICATION/JSON', 'text/html', '', 'application/json; charset=utf-16'];
    const auths = [`Bearer ${a.key}`, `bearer ${a.key}`, `Bearer  ${a.key} `, 'Bearer ' + a.key.toUpperCase(), 'Bearer \u00e9', 'x'.repeat(4000)];
    for (const body of bodies) {
      for (const type of types) {
        for (const authorization of auths) {
          const headers: Record<string, string> = { authorization };
          if (type) headers['content-type'] = type;
          const res = await fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers, body });
          const json = (await res.json()) as any;
          expect(res.status, `${type} ${authorization.slice(0, 20)} ${String(body).slice(0, 40)} → ${JSON.stringify(json)}`).toBeLessThan(500);
          if (res.status !== 200) expect(Object.keys(json).sort()).toEqual(['code', 'error', 'requestId']);
        }
      }
    }
  });
});
