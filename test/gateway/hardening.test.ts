import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { RawClient } from './raw-http.js';

/** Issue 12, hardening: timeouts, parser-level errors, Host checks, database outages, subscription caps. */
const apps: TestApp[] = [];
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
});

async function start(...args: Parameters<typeof startTestApp>): Promise<TestApp> {
  const t = await startTestApp(...args);
  apps.push(t);
  return t;
}

const portOf = (t: TestApp) => Number(new URL(t.baseUrl).port);

describe('request timeouts', () => {
  let t: TestApp;
  let acc: TestAccount;
  let releaseSlow!: () => void;
  const slowReleased = new Promise<void>((r) => (releaseSlow = r));
  const logs: { level: number; msg: string; code?: string; requestId?: string }[] = [];
  beforeAll(async () => {
    t = await start({
      LOG_LEVEL: 'info',
      logStream: { write: (line: string) => logs.push(JSON.parse(line)) },
      REQUEST_TIMEOUT_MS: '400',
      HEADERS_TIMEOUT_MS: '200',
      beforeListen: (app) => {
        // Slower than the request timeout, once its request has arrived.
        app.get('/test/slow', async () => {
          await slowReleased;
          return { slow: true };
        });
      },
    });
    acc = await t.createAccountWithKey({ credits: 5 });
  });

  it('a body that stalls: 408 in the contract shape, with the request id, then the connection closes', async () => {
    const c = await RawClient.connect(portOf(t));
    c.write(
      `POST /api/playground/query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acc.key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: 100\r\nX-Request-Id: stalled-body\r\n\r\n{"keyw`,
    );
    const res = await c.response();
    expect(res.status).toBe(408);
    expect(res.headers.connection).toBe('close');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toBe('stalled-body');
    expect(JSON.parse(res.body)).toEqual({ error: 'Request timed out', code: 'request_timeout', requestId: 'stalled-body' });
    await c.closed;
    // Nothing was charged.
    expect(await t.services.credits.balances([acc.accountId])).toEqual([5]);
    // A client's fault: logged at info with the request id, nothing at warn or above.
    expect(logs.find((l) => l.code === 'request_timeout' && l.requestId === 'stalled-body')?.level).toBe(30);
    expect(logs.filter((l) => l.level >= 40)).toEqual([]);
  });

  it('headers that stall: 408 in the contract shape with a request id of its own, then the connection closes', async () => {
    const c = await RawClient.connect(portOf(t));
    c.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Something: `);
    const res = await c.response();
    expect(res.status).toBe(408);
    expect(JSON.parse(res.body)).toEqual({ error: 'Request timed out', code: 'request_timeout', requestId: expect.stringMatching(/^[\w-]{8,}$/) });
    expect(res.headers['x-request-id']).toBe(JSON.parse(res.body).requestId);
    await c.closed;
  });

  it('time spent answering is not cut, nor is an open WebSocket', async () => {
    const ws = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    const messages: { type: string }[] = [];
    ws.on('message', (data) => messages.push(JSON.parse(String(data))));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${acc.key}` } }));
    await until(() => messages.some((m) => m.type === 'connection_ack'), 'connection_ack');

    const slow = fetch(`${t.baseUrl}/test/slow`);
    // A request that stalls after the slow one started times out: by then the slow one and the
    // WebSocket are older than the timeout too.
    const c = await RawClient.connect(portOf(t));
    c.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n`);
    expect((await c.response()).status).toBe(408);
    releaseSlow();
    const res = await slow;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ slow: true });
    ws.send(JSON.stringify({ type: 'ping' }));
    await until(() => messages.some((m) => m.type === 'pong'), 'pong');
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });
});

describe('GraphQL over HTTP', () => {
  it('a subscription is a 400 BAD_USER_INPUT saying subscriptions use WebSocket, not a logged fault', async () => {
    const logs: { level: number; msg: string }[] = [];
    const t = await start({ LOG_LEVEL: 'info', logStream: { write: (line: string) => logs.push(JSON.parse(line)) } });
    const acc = await t.createAccountWithKey({ credits: 5 });
    const query = 'subscription { jobStatus(jobId: "00000000-0000-4000-8000-000000000000") { status } }';
    const expected = {
      errors: [{ message: 'Subscriptions are served over WebSocket (graphql-transport-ws) at /graphql', extensions: { code: 'BAD_USER_INPUT' } }],
    };
    const post = await fetch(`${t.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${acc.key}` },
      body: JSON.stringify({ query }),
    });
    expect(post.status).toBe(400);
    expect(await post.json()).toMatchObject(expected);
    const get = await fetch(`${t.baseUrl}/graphql?query=${encodeURIComponent(query)}`, {
      headers: { authorization: `Bearer ${acc.key}`, 'apollo-require-preflight': '1' },
    });
    expect(get.status).toBe(400);
    expect(await get.json()).toMatchObject(expected);
    expect(logs.filter((l) => l.level >= 40)).toEqual([]);
    // Queries still run.
    const me = await fetch(`${t.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${acc.key}` },
      body: JSON.stringify({ query: '{ me { credits } }' }),
    });
    expect(await me.json()).toEqual({ data: { me: { credits: 5 } } });
  });
});
