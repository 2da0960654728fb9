// The delivery attempt against in-memory fakes: the address is checked again at delivery and the
// transport is handed only the address that was checked; and the HTTP transport connects to that
// address whatever the URL's host name resolves to (DNS rebinding cannot move it).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookDeliverer } from '../../src/domain/webhooks/deliverer.js';
import type { AttemptResult, DeliveryRecord, EndpointRecord, SendOutcome } from '../../src/domain/webhooks/ports.js';
import { httpTransport } from '../../src/providers/webhooks/http-transport.js';

function fakes(resolveTo: () => string[]) {
  const endpoint: EndpointRecord = {
    id: 'ep_1',
    accountId: 'a1',
    url: 'https://hooks.example.test/in',
    events: ['job.completed'],
    secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    baseUrl: 'http://gateway',
    createdAt: new Date(),
    disabledAt: null,
  };
  const delivery: DeliveryRecord = {
    id: 'dlv_1',
    eventId: 'msg_1',
    accountId: 'a1',
    endpointId: 'ep_1',
    type: 'job.completed',
    body: '{"type":"job.completed"}',
    status: 'pending',
    attempts: [],
    createdAt: new Date(),
    nextAttemptAt: new Date(0),
    lockedUntil: null,
  };
  const sent: { url: string; address: string; headers: Record<string, string> }[] = [];
  const recorded: AttemptResult[] = [];
  const deliverer = new WebhookDeliverer({
    deliveries: {
      claim: async (_id, _now, lockUntil) => (delivery.status === 'pending' ? { ...delivery, lockedUntil: lockUntil } : null),
      record: async (_id, _lock, result) => {
        recorded.push(result);
        delivery.attempts.push(result.attempt);
        delivery.status = result.status;
        return true;
      },
    },
    endpoints: { find: async () => endpoint, disable: async () => {} },
    transport: {
      post: async (url, address, headers): Promise<SendOutcome> => {
        sent.push({ url: url.href, address, headers });
        return { kind: 'answered', statusCode: 200 };
      },
    },
    resolve: async () => resolveTo(),
    allowPrivate: false,
    scheduleMs: [1000],
    timeoutMs: 15_000,
  });
  return { deliverer, sent, recorded };
}

describe('WebhookDeliverer', () => {
  it('connects only to the address it checked, signed', async () => {
    const { deliverer, sent } = fakes(() => ['93.184.215.14']);
    expect(await deliverer.attempt('dlv_1')).toEqual({ kind: 'delivered' });
    expect(sent).toHaveLength(1);
    expect(sent[0].address).toBe('93.184.215.14');
    expect(sent[0].headers['webhook-id']).toBe('msg_1');
    expect(sent[0].headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('a name that now resolves to loopback is refused at delivery: nothing sent, the attempt recorded, retried later', async () => {
    const { deliverer, sent, recorded } = fakes(() => ['127.0.0.1']);
    const outcome = await deliverer.attempt('dlv_1');
    expect(sent).toHaveLength(0);
    expect(outcome.kind).toBe('retry');
    expect(recorded[0].attempt).toMatchObject({ statusCode: null, error: expect.stringMatching(/must not point to a loopback/) });
    expect(recorded[0].status).toBe('pending');
  });
});

describe('httpTransport', () => {
  let server: http.Server;
  let port: number;
  const hosts: string[] = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hosts.push(String(req.headers.host));
      req.resume();
      req.on('end', () => res.writeHead(202).end());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('reaches the pinned address whatever the host name resolves to, with the URL’s Host', async () => {
    // `.invalid` never resolves (RFC 6761): only the pinned address can have been used.
    const outcome = await httpTransport.post(new URL(`http://hooks.invalid:${port}/in`), '127.0.0.1', { 'content-type': 'application/json' }, '{}', 5_000);
    expect(outcome).toEqual({ kind: 'answered', statusCode: 202 });
    expect(hosts).toEqual([`hooks.invalid:${port}`]);
  });

  it('a refused connection is an error, not an answer', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const outcome = await httpTransport.post(new URL(`http://127.0.0.1:${freePort}/`), '127.0.0.1', {}, '{}', 5_000);
    expect(outcome).toEqual({ kind: 'error', error: 'ECONNREFUSED' });
  });
});
