/**
 * What a client puts in a console URL (a path segment, a query parameter) never yields a 500: an asset
 * name that is also an Object property is a 404, a query parameter that is not what the page reads is a
 * 400 naming it and its rule, as a page for browsers and in the contract's JSON for JSON clients.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, createConsoleUser, signIn } from '../helpers/console.js';

let t: TestApp;
let cookie: string;
beforeAll(async () => {
  t = await startTestApp();
  const u = await createConsoleUser(t);
  cookie = (await signIn(t, u.email, u.password)).cookie!;
});
afterAll(async () => {
  await t?.close();
});

const json = { accept: 'application/json' };

describe('assets', () => {
  it('a name that is an Object property is a 404 in the contract shape, not a 500', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__']) {
      const res = await consoleGet(t, `/console/assets/${name}`, null, json);
      expect(res.status, name).toBe(404);
      expect(await res.json(), name).toMatchObject({ error: 'Route not found', code: 'route_not_found', requestId: expect.any(String) });
      const page = await consoleGet(t, `/console/assets/${name}`, null);
      expect(page.status, name).toBe(404);
      expect(page.headers.get('content-type')).toContain('text/html');
    }
    expect((await consoleGet(t, '/console/assets/console.css', null)).status).toBe(200);
  });
});

describe('usage dates', () => {
  const cases: [string, string][] = [
    ['to=abc', 'to must be a date (YYYY-MM-DD)'],
    ['from=abc', 'from must be a date (YYYY-MM-DD)'],
    ['to=2026-02-31', 'to must be a date (YYYY-MM-DD)'],
    ['to=-1', 'to must be a date (YYYY-MM-DD)'],
    ['to=__proto__', 'to must be a date (YYYY-MM-DD)'],
    [`to=${'9'.repeat(5000)}`, 'to must be a date (YYYY-MM-DD)'],
    ['to=%ff', 'to must be a date (YYYY-MM-DD)'],
    ['to=a&to=b', 'to must be given once'],
    ['from=2026-01-01&from=2026-01-02', 'from must be given once'],
  ];

  it('a bad `to` or `from` is a 400 invalid_request naming the field and the rule (JSON clients)', async () => {
    for (const path of ['/console/usage', '/console/usage.csv']) {
      for (const [query, message] of cases) {
        const res = await consoleGet(t, `${path}?${query}`, cookie, json);
        expect(res.status, `${path}?${query.slice(0, 40)}`).toBe(400);
        expect(await res.json()).toMatchObject({ error: message, code: 'invalid_request', requestId: expect.any(String) });
      }
    }
  });

  it('and a page saying so for browsers', async () => {
    for (const path of ['/console/usage', '/console/usage.csv']) {
      for (const [query, message] of cases) {
        const res = await consoleGet(t, `${path}?${query}`, cookie);
        expect(res.status, `${path}?${query.slice(0, 40)}`).toBe(400);
        expect(res.headers.get('content-type')).toContain('text/html');
        expect(await res.text()).toContain(message);
      }
    }
  });

  it('empty values are the default range, and a given `to` alone ends a 30-day range', async () => {
    const empty = await consoleGet(t, '/console/usage.csv?from=&to=', cookie);
    expect(empty.status).toBe(200);
    const to = new Date().toISOString().slice(0, 10);
    const from = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
    expect(empty.headers.get('content-disposition')).toBe(`attachment; filename="usage-${from}-${to}.csv"`);
    const given = await consoleGet(t, '/console/usage.csv?to=2026-03-01', cookie);
    expect(given.headers.get('content-disposition')).toBe('attachment; filename="usage-2026-01-31-2026-03-01.csv"');
  });
});

describe('other query parameters', () => {
  it('audit filters, the jobs cursor, the playground job and the sessions notice: a 400 naming the field, never a 500', async () => {
    const cases: [string, string][] = [
      ['/console/audit?event=key.created&event=key.deleted', 'event must be given once'],
      ['/console/audit?to=abc', 'to must be a date (YYYY-MM-DD)'],
      ['/console/audit.csv?from=a&from=b', 'from must be given once'],
      ['/console/audit.jsonl?to=__proto__', 'to must be a date (YYYY-MM-DD)'],
      ['/console/jobs?after=a&after=b', 'after must be given once'],
      ['/console/jobs?after=__proto__', 'after must be a cursor returned by a previous page'],
      ['/console/playground?job=a&job=b', 'job must be given once'],
      ['/console/sessions?ended=abc', 'ended must be a whole number of sessions'],
      [`/console/sessions?ended=${'9'.repeat(400)}`, 'ended must be a whole number of sessions'],
    ];
    for (const [url, message] of cases) {
      const res = await consoleGet(t, url, cookie, json);
      expect(res.status, url.slice(0, 60)).toBe(400);
      expect(await res.json(), url.slice(0, 60)).toMatchObject({ error: message, code: 'invalid_request' });
      const page = await consoleGet(t, url, cookie);
      expect(page.status, url.slice(0, 60)).toBe(400);
      expect(await page.text()).toContain(message);
    }
  });

  it('odd values of every parameter never yield a 500', async () => {
    const params: Record<string, string[]> = {
      '/console': ['x'],
      '/console/usage': ['from', 'to'],
      '/console/usage.csv': ['from', 'to'],
      '/console/audit': ['event', 'from', 'to'],
      '/console/audit.csv': ['event', 'from', 'to'],
      '/console/audit.jsonl': ['event', 'from', 'to'],
      '/console/jobs': ['after'],
      '/console/playground': ['job'],
      '/console/sessions': ['ended'],
      '/console/sign-in': ['next'],
    };
    const values = ['abc', '', 'a'.repeat(5000), '__proto__', 'constructor', '%ff', '0000-01-01', '9999-12-31', '1e400', '-1', '9'.repeat(30)];
    for (const [path, names] of Object.entries(params)) {
      for (const name of names) {
        const queries = [...values.map((v) => `${name}=${v === '%ff' ? v : encodeURIComponent(v)}`), `${name}=a&${name}=b`, `${name}[]=a`, `${name}[x]=a`, '__proto__=1', '__proto__[x]=1'];
        for (const query of queries) {
          for (const c of [cookie, null]) {
            const res = await consoleGet(t, `${path}?${query}`, c, json);
            expect(res.status, `${path}?${query.slice(0, 40)}`).toBeLessThan(500);
            await res.arrayBuffer();
          }
        }
      }
    }
  });
});
