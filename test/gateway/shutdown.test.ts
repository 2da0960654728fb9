import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startGatewayProcess, type GatewayProcess } from './gateway-process.js';
import { RawClient, type RawResponse } from './raw-http.js';

/**
 * SIGTERM: stop accepting, answer what is in flight with `Connection: close`, close idle keep-alive
 * sockets and WebSockets (1001), drain the in-process worker, close services, exit 0. A request that
 * arrives while the gateway drains gets a 503 in the contract's shape with Retry-After.
 */
const processes: GatewayProcess[] = [];
const apps: TestApp[] = [];
afterAll(async () => {
  await Promise.all(processes.map((p) => p.dispose()));
  await Promise.all(apps.map((a) => a.close().catch(() => undefined)));
});

const contractError = { error: expect.any(String), code: expect.any(String), requestId: expect.any(String) };

function lookupHead(port: number, key: string, body: string, requestId: string): string {
  return (
    `POST /api/playground/query HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n` +
    `Authorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${requestId}\r\n\r\n`
  );
}

describe('graceful shutdown (the real process)', () => {
  it('SIGTERM with keep-alive clients and a request in flight: the request is answered with Connection: close, sockets close, exit 0', async () => {
    const gw = await startGatewayProcess({ IN_PROCESS_WORKER: 'true' });
    processes.push(gw);

    // An idle keep-alive connection: one request answered, then it sits there.
    const idle = await RawClient.connect(gw.port);
    idle.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nConnection: keep-alive\r\n\r\n`);
    const first = await idle.response();
    expect(first.status).toBe(200);
    expect(first.headers.connection).toBe('keep-alive');

    // A GraphQL WebSocket, acknowledged.
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/graphql`, 'graphql-transport-ws');
    const wsClosed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${gw.key}` } })));
      ws.once('message', (data) => (JSON.parse(String(data)).type === 'connection_ack' ? resolve() : reject(new Error(String(data)))));
      ws.once('error', reject);
    });

    // A request in flight: headers and half of the body, then nothing until the gateway is closing.
    const body = JSON.stringify({ keyword: 'serendipity' });
    const inflight = await RawClient.connect(gw.port);
    inflight.write(lookupHead(gw.port, gw.key, body, 'shutdown-inflight') + body.slice(0, 10));
    await gw.line(/"reqId":"shutdown-inflight".*"incoming request"|"incoming request".*"reqId":"shutdown-inflight"/);

    const signalledAt = Date.now();
    gw.child.kill('SIGTERM');
    // The idle connection is closed once the gateway stops accepting: it is closing by then.
    await idle.closed;
    inflight.write(body.slice(10));
    const answer = await inflight.response().catch((err: Error) => {
      throw new Error(`${err.message}\n--- gateway stderr:\n${gw.stderr()}\n--- last lines:\n${gw.lines.slice(-30).join('\n')}`);
    });
    expect(answer.status, answer.body).toBe(200);
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body)).toMatchObject({ keyword: 'serendipity', credits: 99 });
    await inflight.closed;

    expect(await wsClosed).toBe(1001);
    const code = await gw.closed;
    console.log(`[shutdown] SIGTERM → exit ${code} in ${Date.now() - signalledAt} ms (one request in flight, one idle keep-alive socket, one WebSocket)`);
    expect(code, gw.stderr() + gw.lines.slice(-20).join('\n')).toBe(0);
    expect(gw.lines.join('\n')).not.toMatch(/shutdown took too long/);
  });

  it('SIGTERM as soon as the gateway listens (its worker still starting) is a graceful shutdown, not the default kill', async () => {
    const gw = await startGatewayProcess({ IN_PROCESS_WORKER: 'true' });
    processes.push(gw);
    // The demo key is printed once the gateway listens, before the in-process worker has started.
    gw.child.kill('SIGTERM');
    const code = await gw.closed;
    expect({ code, signal: gw.child.signalCode }, gw.stderr() + gw.lines.slice(-20).join('\n')).toEqual({ code: 0, signal: null });
    expect(gw.lines.some((l) => /"msg":"shut down"/.test(l))).toBe(true);
  });

  it('SIGTERM under load: every answer is complete (200, or a 503 in the contract shape with Retry-After), exit 0', async () => {
    const gw = await startGatewayProcess({ IN_PROCESS_WORKER: 'true', LOG_LEVEL: 'warn' });
    processes.push(gw);
    const answers: RawResponse[] = [];
    let stopped = false;
    // Eight keep-alive clients, each sending the next request as soon as the last one is answered.
    const client = async (n: number) => {
      const c = await RawClient.connect(gw.port);
      for (let i = 0; !c.ended; i++) {
        c.write(`GET /api/playground/images/00000000-0000-4000-8000-${String(n * 1e6 + i).padStart(12, '0')} HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nAuthorization: Bearer ${gw.key}\r\n\r\n`);
        try {
          const res = await c.response();
          answers.push(res);
          if (res.headers.connection === 'close') break;
        } catch {
          // The connection went between two requests (the client sent on a socket the server was closing).
          break;
        }
        if (stopped && c.ended) break;
      }
      c.destroy();
    };
    const clients = Array.from({ length: 8 }, (_, n) => client(n));
    await until(() => answers.length >= 200, '200 answers under load');
    const signalledAt = Date.now();
    gw.child.kill('SIGTERM');
    const code = await gw.closed;
    const elapsed = Date.now() - signalledAt;
    stopped = true;
    await Promise.all(clients);
    const byStatus: Record<number, number> = {};
    for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
    console.log(`[shutdown] under load (8 keep-alive clients): SIGTERM → exit ${code} in ${elapsed} ms; answers by status ${JSON.stringify(byStatus)}`);
    expect(code, gw.stderr()).toBe(0);
    for (const a of answers) {
      expect([404, 503]).toContain(a.status);
      expect(JSON.parse(a.body)).toEqual(contractError);
      if (a.status === 503) expect(a.headers['retry-after']).toMatch(/^\d+$/);
    }
  });
});

describe('while the gateway drains', () => {
  it('a new request gets 503 in the contract shape with Retry-After and Connection: close; GraphQL in flight is answered', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let draining = false;
    const seen = new Set<string>();
    const t = await startTestApp({
      beforeListen: (app) => {
        app.addHook('onRequest', async (request) => {
          seen.add(String(request.id));
        });
        // Holds the close between "closing" and "stop accepting", where requests still arrive.
        app.addHook('preClose', async () => {
          draining = true;
          await held;
        });
      },
    });
    apps.push(t);
    const acc = await t.createAccountWithKey({ credits: 5 });
    const port = Number(new URL(t.baseUrl).port);
    const c = await RawClient.connect(port);
    c.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect((await c.response()).status).toBe(200);
    // A GraphQL request in flight: its headers are in, its body is not.
    const inflight = await RawClient.connect(port);
    const query = JSON.stringify({ query: '{ me { credits } }' });
    inflight.write(`POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acc.key}\r\nContent-Type: application/json\r\nContent-Length: ${query.length}\r\nX-Request-Id: gql-inflight\r\n\r\n${query.slice(0, 5)}`);
    await until(() => seen.has('gql-inflight'), 'the GraphQL request reached the server');

    const closing = t.app.close();
    try {
      await until(() => draining, 'preClose reached');
      c.write(lookupHead(port, acc.key, '{"keyword":"cat"}', 'late-1') + '{"keyword":"cat"}');
      const res = await c.response();
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^\d+$/);
      expect(res.headers.connection).toBe('close');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(res.body)).toEqual({ error: 'Server is shutting down', code: 'shutting_down', requestId: 'late-1' });
      await c.closed;

      const g = await RawClient.connect(port);
      g.write(`POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acc.key}\r\nContent-Type: application/json\r\nContent-Length: ${query.length}\r\n\r\n${query}`);
      const gres = await g.response();
      expect(gres.status).toBe(503);
      expect(gres.headers['retry-after']).toMatch(/^\d+$/);
      expect(JSON.parse(gres.body)).toMatchObject({ errors: [{ message: 'Server is shutting down', extensions: { code: 'SERVICE_UNAVAILABLE' } }] });
    } finally {
      release();
    }
    inflight.write(query.slice(5));
    const answered = await inflight.response();
    expect(answered.status, answered.body).toBe(200);
    expect(answered.headers.connection).toBe('close');
    expect(JSON.parse(answered.body)).toEqual({ data: { me: { credits: 5 } } });
    await closing;
    // Nothing was charged for the refused request.
    expect(await t.services.credits.balances([acc.accountId])).toEqual([5]);
  });
});
