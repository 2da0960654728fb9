import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildAdminServices } from '../../src/cli/services.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.js';
import { until } from '../helpers/until.js';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * Tracing end to end, all real processes: a gateway and a standalone worker export spans over OTLP/HTTP
 * to a receiver on loopback (the gateway in the default `http/protobuf`, the worker in `http/json`).
 * A create request that carries a `traceparent` continues its trace into the worker's span for each
 * image and into the webhook delivery, whose request carries `traceparent`; log lines carry `trace_id`.
 */
const dbName = `t_tracing_${process.pid}`;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
/** Processes that start (and load the SDK) on a busy machine: a generous deadline. */
const SLOW = { timeoutMs: 110_000 };
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

interface Export {
  contentType: string;
  body: Buffer;
}

const exports: Export[] = [];
const deliveries: http.IncomingHttpHeaders[] = [];
const children: { proc: ChildProcess; out: () => string }[] = [];
let collector: http.Server;
let receiver: http.Server;
let uri: string;
let key: string;
let fake: FakeOpenAi;

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

function start(entry: string[], env: Record<string, string>): { proc: ChildProcess; out: () => string } {
  const proc = spawn(process.execPath, ['--import', 'tsx', ...entry], {
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_LEVEL: 'info', MONGODB_URI: uri, OTEL_BSP_SCHEDULE_DELAY: '100', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const child = { proc, out: () => out };
  children.push(child);
  return child;
}

/** Spans of every JSON export, flattened. */
interface JsonSpan {
  traceId: string;
  name: string;
  service: string;
  attributes: Record<string, string | undefined>;
}

function jsonSpans(): JsonSpan[] {
  return exports
    .filter((e) => e.contentType.startsWith('application/json'))
    .flatMap((e) => {
      type Attribute = { key: string; value: { stringValue?: string } };
      const body = JSON.parse(e.body.toString()) as { resourceSpans: { resource: { attributes: Attribute[] }; scopeSpans: { spans: { traceId: string; name: string; attributes?: Attribute[] }[] }[] }[] };
      return body.resourceSpans.flatMap((rs) => {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        return rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((s) => ({ traceId: s.traceId, name: s.name, service, attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, a.value.stringValue])) })),
        );
      });
    });
}

beforeAll(async () => {
  uri = inject('mongoUri').replace(/\/?$/, `/${dbName}`);
  collector = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') exports.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': String(req.headers['content-type'] ?? 'application/json') }).end();
    });
  });
  receiver = http.createServer((req, res) => {
    deliveries.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  fake = await startFakeOpenAi();
  const otlp = await listen(collector);
  const hooks = await listen(receiver);

  const connection = await mongoose.createConnection(uri, { serverSelectionTimeoutMS: 5000 }).asPromise();
  const admin = await buildAdminServices({ connection, host: 'test' });
  const actor = { actor: 'test', ip: '127.0.0.1', host: 'test' };
  const account = await admin.credits.createAccount('traced', 100, actor);
  key = (await admin.keys.create(account.id, 'traced', actor)).key;
  await admin.close();
  await connection.close();

  const gateway = start(['--import', './src/tracing/gateway.ts', 'src/main.ts'], {
    PORT: '0',
    HOST: '127.0.0.1',
    IN_PROCESS_WORKER: 'false',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
  });
  // A second gateway exporting http/json, whose spans the GraphQL tests read by name.
  const jsonGateway = start(['--import', './src/tracing/gateway.ts', 'src/main.ts'], {
    PORT: '0',
    HOST: '127.0.0.1',
    IN_PROCESS_WORKER: 'false',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'credit-gateway-json',
  });
  const worker = start(['--import', './src/tracing/worker.ts', 'workers/main.ts'], {
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    IMAGE_PROVIDER: 'openai',
    IMAGE_API_URL: fake.url,
    IMAGE_RETRIES: '0',
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  });
  await until(() => /Gateway listening on (\S+) /.test(gateway.out()), 'the gateway listening', SLOW).catch((err: Error) => {
    throw new Error(`${err.message} (exit ${gateway.proc.exitCode}, ${gateway.proc.signalCode})\n${gateway.out()}`);
  });
  await until(() => worker.out().includes('image worker started'), 'the worker started', SLOW).catch((err: Error) => {
    throw new Error(`${err.message}\n${worker.out()}`);
  });
  gatewayUrl = /Gateway listening on (\S+) /.exec(gateway.out())![1]!;
  await until(() => /Gateway listening on (\S+) /.test(jsonGateway.out()), 'the second gateway listening', SLOW).catch((err: Error) => {
    throw new Error(`${err.message}\n${jsonGateway.out()}`);
  });
  jsonGatewayUrl = /Gateway listening on (\S+) /.exec(jsonGateway.out())![1]!;
  const created = await fetch(`${gatewayUrl}/api/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${hooks}/hook` }),
  });
  expect(created.status).toBe(201);
}, 240_000);

let gatewayUrl: string;
let jsonGatewayUrl: string;

afterAll(async () => {
  for (const c of children) {
    c.proc.kill('SIGKILL');
  }
  collector?.close();
  await fake?.close();
  receiver?.close();
  const connection = await mongoose.createConnection(uri).asPromise();
  await connection.dropDatabase();
  await connection.close();
});

describe('OpenTelemetry traces (OTLP/HTTP)', () => {
  it("a create request's trace continues in the worker (one span per image) and into the webhook delivery", async () => {
    const res = await fetch(`${gatewayUrl}/api/playground/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: PARENT },
      // The second image fails for good at the provider: the worker logs it, inside its span.
      body: JSON.stringify({ prompts: ['a lighthouse', 'a teapot [reject]'] }),
    });
    expect(res.status).toBe(201);

    // The gateway (http/protobuf): its export holds the trace id's 16 bytes.
    const traceIdBytes = Buffer.from(TRACE_ID, 'hex');
    await until(
      () => exports.some((e) => e.contentType === 'application/x-protobuf' && e.body.includes(traceIdBytes) && e.body.includes(Buffer.from('credit-gateway'))),
      'gateway spans of the trace',
    );
    // The worker (http/json): one image.generate span per image, in the same trace, named by its service.
    await until(() => jsonSpans().filter((s) => s.name === 'image.generate' && s.traceId === TRACE_ID).length === 2, 'two image spans in the trace', SLOW);
    expect(new Set(jsonSpans().filter((s) => s.name === 'image.generate').map((s) => s.service))).toEqual(new Set(['credit-gateway-worker']));

    // The job's final event is delivered with the trace carried on.
    await until(() => deliveries.length === 1, 'the webhook delivery', SLOW);
    expect(deliveries[0]!.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[\\da-f]{16}-01$`));
    await until(() => jsonSpans().some((s) => s.name === 'webhook.deliver' && s.traceId === TRACE_ID), 'the delivery span in the trace', SLOW);
  });

  it('log lines written inside a traced request or image carry its trace_id', async () => {
    const [gateway, , worker] = children;
    const lines = (text: string) => text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { trace_id?: string; msg?: string });
    await until(() => lines(gateway!.out()).some((l) => l.trace_id === TRACE_ID), 'a gateway log line with the trace id', SLOW);
    const failed = await until(() => lines(worker!.out()).find((l) => l.msg === 'image failed and was refunded'), 'the worker logging the failed image', SLOW);
    expect(failed.trace_id).toBe(TRACE_ID);
    // As the gateway's pino lines: the span too, by the same instrumentation.
    expect(failed).toMatchObject({ span_id: expect.stringMatching(/^[0-9a-f]{16}$/), level: 30 });
  });

  it('each GraphQL operation is a span named by its type and name, in its HTTP request’s trace or its subscribe’s, over HTTP and WebSocket', async () => {
    const traceOf = (n: number) => `${n}`.repeat(32).slice(0, 32);
    const post = (query: string, trace: string) =>
      fetch(`${jsonGatewayUrl}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', traceparent: `00-${trace}-00f067aa0ba902b7-01` },
        body: JSON.stringify({ query }),
      });
    expect((await post('query Balance { me { credits } }', traceOf(1))).status).toBe(200);
    expect((await post('mutation { lookup(keyword: "oak") { credits } }', traceOf(2))).status).toBe(200);
    expect((await post('{ me { nope } }', traceOf(3))).status).toBe(400);
    const client = createClient({ url: `${jsonGatewayUrl.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { Authorization: `Bearer ${key}` } });
    try {
      const overSocket = await new Promise<unknown>((resolve, reject) => {
        let data: unknown;
        client.subscribe(
          { query: 'query OverSocket { me { credits } }', extensions: { traceparent: `00-${traceOf(4)}-00f067aa0ba902b7-01` } },
          { next: (m) => (data = m.data), error: reject, complete: () => resolve(data) },
        );
      });
      expect(overSocket).toEqual({ me: { credits: expect.any(Number) } });
    } finally {
      await client.dispose();
    }
    const operation = (trace: string) => jsonSpans().find((s) => s.traceId === trace && s.attributes['graphql.operation.type'] !== undefined);
    await until(() => operation(traceOf(4)) && operation(traceOf(2)) && operation(traceOf(1)), 'the operation spans', SLOW);
    expect(operation(traceOf(1))).toMatchObject({ name: 'query Balance', service: 'credit-gateway-json', attributes: { 'graphql.operation.type': 'query', 'graphql.operation.name': 'Balance' } });
    expect(operation(traceOf(2))).toMatchObject({ name: 'mutation', attributes: { 'graphql.operation.type': 'mutation' } });
    expect(operation(traceOf(2))!.attributes['graphql.operation.name']).toBeUndefined();
    expect(operation(traceOf(4))).toMatchObject({ name: 'query OverSocket', attributes: { 'graphql.operation.name': 'OverSocket' } });
    // A document that does not validate is still one operation's span, in its request's trace.
    await until(() => jsonSpans().some((s) => s.traceId === traceOf(3) && s.name === 'GraphQL Operation'), 'the invalid document’s span', SLOW);
    // One span per operation: the HTTP request's trace holds exactly one.
    expect(jsonSpans().filter((s) => s.traceId === traceOf(1) && s.name === 'query Balance')).toHaveLength(1);
    expect(jsonSpans().filter((s) => s.traceId === traceOf(4) && s.name === 'query OverSocket')).toHaveLength(1);
    // The resolvers' database reads are in the operation's trace.
    expect(jsonSpans().some((s) => s.traceId === traceOf(4) && s.name === 'find accounts')).toBe(true);
    // Hook and handler spans are named, never by source code.
    const names = new Set(jsonSpans().filter((s) => s.service === 'credit-gateway-json').map((s) => s.name));
    for (const name of names) {
      expect(name.length, name).toBeLessThanOrEqual(100);
      expect(name, name).not.toMatch(/=>|[{}();]/);
    }
    expect([...names].some((n) => n.startsWith('onRequest - authenticate'))).toBe(true);
  });
});
