import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

// `GET /`: the address the gateway prints. A browser goes on to the console, an API client gets an
// index of the paths this gateway serves.
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('GET /', () => {
  it('sends a browser to the console', async () => {
    const accept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const res = await fetch(`${t.baseUrl}/`, { redirect: 'manual', headers: { accept } });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    // Followed, it lands on the console's sign-in (no session yet).
    const landed = await fetch(`${t.baseUrl}/`, { headers: { accept } });
    expect(landed.status).toBe(200);
    expect(landed.url).toMatch(/\/console\/sign-in$/);
  });

  it('answers an API client with an index of the paths served, and only those', async () => {
    for (const accept of [null, 'application/json', '*/*']) {
      const res = await fetch(`${t.baseUrl}/`, { headers: accept ? { accept } : {} });
      expect(res.status, String(accept)).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      // In the order a newcomer looks for them.
      expect(JSON.stringify(await res.json())).toBe('{"name":"credit-gateway","console":"/console","graphql":"/graphql","openapi":"/openapi.json","docs":"/docs"}');
    }
  });

  it('other unknown paths are still the JSON 404', async () => {
    const res = await fetch(`${t.baseUrl}/nope`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'route_not_found' });
  });
});
