import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startConfiguredImageWorker } from '../../workers/image-worker.js';
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
      // Short, but not so short that a busy machine's stalled event loop makes a prompt client late.
      REQUEST_TIMEOUT_MS: '3000',
      HEADERS_TIMEOUT_MS: '1500',
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

describe('every error body has the contract shape (raw bytes)', () => {
  let t: TestApp;
  let acc: TestAccount;
  const logs: { level: number }[] = [];
  beforeAll(async () => {
    t = await start({ LOG_LEVEL: 'info', logStream: { write: (line: string) => logs.push(JSON.parse(line)) } });
    acc = await t.createAccountWithKey({ credits: 5 });
  });

  /** Sends `bytes` on a fresh connection and reads one answer. */
  async function send(bytes: string | Buffer) {
    const c = await RawClient.connect(portOf(t));
    c.write(bytes);
    const res = await c.response();
    return { res, body: JSON.parse(res.body) as Record<string, unknown>, closed: c.closed };
  }

  const shaped = (code: string, error?: string | RegExp) => ({
    error: error === undefined ? expect.any(String) : typeof error === 'string' ? error : expect.stringMatching(error),
    code,
    requestId: expect.stringMatching(/^[\w.:-]{8,}$/),
  });

  it('a 5,000-character job id is the README\'s 404 job_not_found, after authentication', async () => {
    const id = 'a'.repeat(5000);
    const authed = await send(`GET /api/playground/images/${id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acc.key}\r\nConnection: close\r\n\r\n`);
    expect(authed.res.status).toBe(404);
    expect(authed.body).toEqual(shaped('job_not_found', 'Job not found'));
    expect(authed.res.body).not.toContain(id);
    const anonymous = await send(`GET /api/playground/images/${id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(anonymous.res.status).toBe(401);
    expect(anonymous.body).toEqual(shaped('missing_authorization'));
  });

  it('a path whose percent-encoding does not decode: 400 malformed_request', async () => {
    const { res, body } = await send(`GET /api/playground/images/%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(body).toEqual(shaped('malformed_request'));
    expect(res.body).not.toContain('%E0');
  });

  it('a control character in a header: 400 malformed_request, then the connection closes', async () => {
    const { res, body, closed } = await send(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: a\x01b\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(res.headers.connection).toBe('close');
    expect(res.headers['x-request-id']).toBe(body.requestId);
    expect(body).toEqual(shaped('malformed_request', 'Malformed HTTP request'));
    await closed;
  });

  it('a 60 KB Authorization header: 431 headers_too_large', async () => {
    const { res, body } = await send(`GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'x'.repeat(60 * 1024)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(body).toEqual(shaped('headers_too_large', 'Request headers too large'));
  });

  it('conflicting Content-Length headers: 400 malformed_request', async () => {
    const { res, body } = await send(
      `POST /api/playground/query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${acc.key}\r\nContent-Type: application/json\r\nContent-Length: 17\r\nContent-Length: 5\r\n\r\n{"keyword":"cat"}`,
    );
    expect(res.status).toBe(400);
    expect(body).toEqual(shaped('malformed_request'));
    expect(await t.services.credits.balances([acc.accountId])).toEqual([5]);
  });

  it('no Host header (HTTP/1.1): 400 malformed_request saying so; HTTP/1.0 needs none', async () => {
    const { res, body } = await send(`GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBe(400);
    expect(body).toEqual(shaped('malformed_request', 'Missing Host header'));
    const old = await RawClient.connect(portOf(t));
    old.write(`GET /healthz HTTP/1.0\r\n\r\n`);
    expect((await old.response()).status).toBe(200);
  });

  it('WebSocket upgrades: another path is 404 route_not_found, a broken handshake 400 malformed_request', async () => {
    const upgrade = (path: string, key = 'dGhlIHNhbXBsZSBub25jZQ==') =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n\r\n`;
    const other = await send(upgrade('/elsewhere'));
    expect(other.res.status).toBe(404);
    expect(other.body).toEqual(shaped('route_not_found', 'Route not found'));
    const broken = await send(upgrade('/graphql', 'nope'));
    expect(broken.res.status).toBe(400);
    expect(broken.body).toEqual(shaped('malformed_request', /Sec-WebSocket-Key/));
  });

  it('none of these is logged as a fault', () => {
    expect(logs.filter((l) => l.level >= 40)).toEqual([]);
  });
});

describe('Host header and image URLs', () => {
  it('NODE_ENV=production needs PUBLIC_BASE_URL or ALLOWED_HOSTS; the message names the variable', async () => {
    const { checkGatewayConfig, loadConfig, ConfigError } = await import('../../src/config.js');
    const prod = (env: Record<string, string>) => () => checkGatewayConfig(loadConfig({ NODE_ENV: 'production', MONGODB_URI: 'mongodb://db.example/gateway', SMTP_URL: 'smtp://mail.example.com', ...env }));
    expect(prod({})).toThrow(ConfigError);
    expect(prod({})).toThrow(/^Invalid configuration:\n\s+PUBLIC_BASE_URL: is required when NODE_ENV=production, unless ALLOWED_HOSTS/);
    expect(prod({ PUBLIC_BASE_URL: 'https://api.example.com' })).not.toThrow();
    expect(prod({ ALLOWED_HOSTS: 'api.example.com, API2.example.com:8443' })).not.toThrow();
    expect(loadConfig({ ALLOWED_HOSTS: 'api.example.com, API2.example.com:8443' }).ALLOWED_HOSTS).toEqual(['api.example.com', 'api2.example.com:8443']);
    expect(() => loadConfig({ ALLOWED_HOSTS: 'http://api.example.com' })).toThrow(/ALLOWED_HOSTS\S*: must be host names/);
    // Development keeps working without either.
    expect(() => checkGatewayConfig(loadConfig({ NODE_ENV: 'development' }))).not.toThrow();
  });

  it('NODE_ENV=production needs MONGODB_URI (never the embedded database); every missing variable is named at once', async () => {
    const { checkGatewayConfig, loadConfig } = await import('../../src/config.js');
    const prod = (env: Record<string, string>) => () => checkGatewayConfig(loadConfig({ NODE_ENV: 'production', SMTP_URL: 'smtp://mail.example.com', ...env }));
    expect(prod({ PUBLIC_BASE_URL: 'https://api.example.com' })).toThrow(/^Invalid configuration:\n\s+MONGODB_URI: is required when NODE_ENV=production[^\n]*$/);
    expect(prod({})).toThrow(/PUBLIC_BASE_URL: is required[^\n]*\n\s+MONGODB_URI: is required/);
    expect(() => checkGatewayConfig(loadConfig({ NODE_ENV: 'development', PUBLIC_BASE_URL: 'https://api.example.com' }))).not.toThrow();
  });

  it('the gateway process refuses to start in production without either, naming PUBLIC_BASE_URL', async () => {
    const { spawn } = await import('node:child_process');
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', PORT: '0' };
    delete env.PUBLIC_BASE_URL;
    delete env.ALLOWED_HOSTS;
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (c) => (stderr += c));
    const code = await new Promise((r) => child.once('close', r));
    expect(code).toBe(1);
    expect(stderr).toMatch(/Invalid configuration:\n\s+PUBLIC_BASE_URL: is required when NODE_ENV=production/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });

  it('ALLOWED_HOSTS: another Host gets 421 in the contract shape (REST, GraphQL, WebSocket); listed hosts build the image URLs; probes answer any Host', async () => {
    const t = await start({ ALLOWED_HOSTS: 'api.example.com,127.0.0.1' });
    const worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
    try {
      const acc = await t.createAccountWithKey({ credits: 5 });
      const port = portOf(t);
      const send = async (bytes: string) => {
        const c = await RawClient.connect(port);
        c.write(bytes);
        return c.response();
      };
      const auth = `Authorization: Bearer ${acc.key}\r\n`;

      const rest = await send(`GET /api/playground/images/00000000-0000-4000-8000-000000000000 HTTP/1.1\r\nHost: evil.example\r\n${auth}Connection: close\r\n\r\n`);
      expect(rest.status).toBe(421);
      expect(JSON.parse(rest.body)).toEqual({ error: 'Host not allowed', code: 'host_not_allowed', requestId: expect.any(String) });
      const body = JSON.stringify({ query: '{ me { credits } }' });
      const gql = await send(`POST /graphql HTTP/1.1\r\nHost: evil.example\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      expect(gql.status).toBe(421);
      expect(JSON.parse(gql.body)).toMatchObject({ errors: [{ message: 'Host not allowed', extensions: { code: 'BAD_USER_INPUT' } }] });
      const ws = await send(`GET /graphql HTTP/1.1\r\nHost: evil.example\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
      expect(ws.status).toBe(421);
      expect(JSON.parse(ws.body)).toEqual({ error: 'Host not allowed', code: 'host_not_allowed', requestId: expect.any(String) });
      // A probe calls by address.
      expect((await send(`GET /healthz HTTP/1.1\r\nHost: 10.1.2.3:4000\r\nConnection: close\r\n\r\n`)).status).toBe(200);
      expect(await t.services.credits.balances([acc.accountId])).toEqual([5]);

      // A listed host (any port, as the entry names none) is the base of the job's image URLs.
      const prompts = JSON.stringify({ prompts: ['a lighthouse'] });
      const created = await send(`POST /api/playground/images HTTP/1.1\r\nHost: API.example.com:8443\r\n${auth}Content-Type: application/json\r\nContent-Length: ${prompts.length}\r\nConnection: close\r\n\r\n${prompts}`);
      expect(created.status).toBe(201);
      const { jobId } = JSON.parse(created.body) as { jobId: string };
      const job = await until(async () => {
        const res = await send(`GET /api/playground/images/${jobId} HTTP/1.1\r\nHost: api.example.com:8443\r\n${auth}Connection: close\r\n\r\n`);
        const parsed = JSON.parse(res.body) as { status: string; images: { url: string | null }[] };
        return parsed.status === 'completed' && parsed;
      }, 'the image job completed');
      expect(job.images[0]!.url).toMatch(/^http:\/\/api\.example\.com:8443\/api\/playground\/images\//);
    } finally {
      await worker.stop(10_000);
    }
  });
});

describe('database outage', () => {
  it('/readyz answers at once from the driver\'s monitoring, requests fail fast with 503 + Retry-After, and both recover', async () => {
    const { startEmbeddedMongo } = await import('@credit-gateway/embedded-mongo');
    const { connectDatabase } = await import('../../src/data/connection.js');
    const { buildServices } = await import('../../src/services.js');
    const { buildApp } = await import('../../src/http/app.js');
    const { loadConfig } = await import('../../src/config.js');
    const dbPath = await mkdtemp(path.join(tmpdir(), 'outage-'));
    let db = await startEmbeddedMongo({ port: 0, dbPath });
    const port = db.port;
    const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', MONGODB_URI: db.uri });
    // As main.ts connects: requests used to wait this long for a server during an outage.
    const connection = await connectDatabase(db.uri, { dbName: 'outage', serverSelectionTimeoutMS: 5000 });
    const services = await buildServices(config, { connection, keyChanges: 'poll' });
    const app = await buildApp({ config, services, logger: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const timed = async (what: string, call: () => Promise<Response>) => {
      const started = performance.now();
      const res = await call();
      const body = await res.text();
      const ms = Math.round(performance.now() - started);
      console.log(`[outage] ${what}: ${res.status} in ${ms} ms`);
      return { res, body, ms };
    };
    try {
      const account = await services.credits.createAccount('o', 5, { actor: 't', ip: null, host: 'h' });
      const key = await services.keys.create(account.id, 'k', { actor: 't', ip: null, host: 'h' });
      const lookup = () =>
        fetch(`${base}/api/playground/query`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: '{"keyword":"cat"}',
        });
      expect((await lookup()).status).toBe(200);

      // The driver's own monitoring is what the gateway goes by: wait until it has seen the outage
      // (its next heartbeat, at most 10 s), which is when requests used to wait out server selection.
      let seenDown = false;
      connection.getClient().on('topologyDescriptionChanged', (event) => {
        if (![...event.newDescription.servers.values()].some((server) => server.isWritable)) seenDown = true;
      });
      await db.stop();
      const ready = await timed('/readyz, first call after the database stopped', () => fetch(`${base}/readyz`));
      expect(ready.res.status).toBe(503);
      expect(ready.res.headers.get('retry-after')).toBe('5');
      expect(ready.ms).toBeLessThan(3000);
      await until(() => seenDown, 'the driver saw the database go');
      for (let i = 0; i < 3; i++) {
        const r = await timed(`lookup #${i + 1} while the database is down`, lookup);
        expect(r.res.status).toBe(503);
        expect(r.res.headers.get('retry-after')).toBe('5');
        expect(JSON.parse(r.body)).toEqual({ error: 'Service temporarily unavailable', code: 'database_unavailable', requestId: expect.any(String) });
        expect(r.ms).toBeLessThan(3000);
      }
      const gql = await timed('GraphQL me while the database is down', () =>
        fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ me { credits } }' }),
        }),
      );
      expect(gql.res.status).toBe(503);
      expect(JSON.parse(gql.body)).toMatchObject({ errors: [{ extensions: { code: 'SERVICE_UNAVAILABLE' } }] });
      expect(gql.ms).toBeLessThan(3000);
      const again = await timed('/readyz while the database is known down', () => fetch(`${base}/readyz`));
      expect(again.res.status).toBe(503);
      expect(again.ms).toBeLessThan(3000);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);

      // Back on the same port and files: readiness and requests recover without a restart.
      db = await startEmbeddedMongo({ port, dbPath });
      await until(async () => (await fetch(`${base}/readyz`)).status === 200, '/readyz ready again');
      await until(async () => (await lookup()).status === 200, 'a lookup succeeds again');
    } finally {
      await app.close();
      await services.close().catch(() => undefined);
      await connection.close(true).catch(() => undefined);
      await db.stop();
      await rm(dbPath, { recursive: true, force: true });
    }
  });
});
