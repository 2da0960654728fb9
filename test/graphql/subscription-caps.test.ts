import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * Open subscriptions are capped per WebSocket (GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET) and per API key
 * on the instance (GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY): over a cap the subscribe gets a RATE_LIMITED
 * error and the socket stays usable; completing or closing gives the places back.
 */
interface Message {
  id?: string;
  type: string;
  payload?: any;
}

class Socket {
  readonly messages: Message[] = [];
  readonly closed: Promise<number>;
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.messages.push(JSON.parse(String(data)) as Message));
    this.closed = new Promise((resolve) => ws.once('close', (code) => resolve(code)));
  }

  static async open(baseUrl: string, key: string): Promise<Socket> {
    const ws = new WebSocket(`${baseUrl.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    const socket = new Socket(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    socket.send({ type: 'connection_init', payload: { Authorization: `Bearer ${key}` } });
    await until(() => socket.messages.some((m) => m.type === 'connection_ack'), 'connection_ack');
    return socket;
  }

  send(message: Message): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Subscribes and resolves with the first answer for `id`: the job's state (next) or an error. */
  async subscribe(id: string, jobId: string): Promise<Message> {
    this.send({ id, type: 'subscribe', payload: { query: 'subscription($id: ID!) { jobStatus(jobId: $id) { status } }', variables: { id: jobId } } });
    return until(() => this.messages.find((m) => m.id === id && (m.type === 'next' || m.type === 'error')), `an answer to ${id}`);
  }
}

const sockets: Socket[] = [];
let t: TestApp;
let acc: TestAccount;
let other: TestAccount;
let jobId: string;

beforeAll(async () => {
  t = await startTestApp({ GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET: '2', GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY: '3' });
  acc = await t.createAccountWithKey({ credits: 5 });
  other = await t.createAccountWithKey({ credits: 5 });
  // No worker runs here: the job stays queued and its subscriptions stay open.
  const res = await fetch(`${t.baseUrl}/api/playground/images`, {
    method: 'POST',
    headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompts: ['a quiet harbour'] }),
  });
  jobId = ((await res.json()) as { jobId: string }).jobId;
});

afterAll(async () => {
  for (const s of sockets) s.ws.close();
  await t.close();
});

async function open(key: string): Promise<Socket> {
  const s = await Socket.open(t.baseUrl, key);
  sockets.push(s);
  return s;
}

const rateLimited = (text: RegExp) => ({ type: 'error', payload: [expect.objectContaining({ message: expect.stringMatching(text), extensions: { code: 'RATE_LIMITED', reason: 'too_many_subscriptions' } })] });

describe('subscription caps', () => {
  it('per socket: the third subscribe is refused, the socket stays usable, a completed one frees its place', async () => {
    const a = await open(acc.key);
    expect(await a.subscribe('a1', jobId)).toMatchObject({ type: 'next', payload: { data: { jobStatus: { status: 'queued' } } } });
    expect(await a.subscribe('a2', jobId)).toMatchObject({ type: 'next' });
    expect(await a.subscribe('a3', jobId)).toMatchObject(rateLimited(/on this connection \(at most 2\)/));

    // Still usable: a query runs on the same socket.
    a.send({ id: 'q1', type: 'subscribe', payload: { query: '{ me { credits } }' } });
    await until(() => a.messages.some((m) => m.id === 'q1' && m.type === 'complete'), 'the query completed');
    expect(a.messages.find((m) => m.id === 'q1' && m.type === 'next')?.payload).toEqual({ data: { me: { credits: 4 } } });
    expect(a.ws.readyState).toBe(WebSocket.OPEN);

    // The client completes one: its place is free again.
    a.send({ id: 'a1', type: 'complete' });
    let n = 0;
    await until(async () => (await a.subscribe(`a4-${++n}`, jobId)).type === 'next', 'a subscribe after a complete');
  });

  it('per key: another socket of the same key reaches the key\'s cap; another key is not affected; closing frees places', async () => {
    // The key holds 2 on the first socket; one more fits, then the key is full.
    const b = await open(acc.key);
    expect(await b.subscribe('b1', jobId)).toMatchObject({ type: 'next' });
    expect(await b.subscribe('b2', jobId)).toMatchObject(rateLimited(/for this API key \(at most 3\)/));
    const c = await open(other.key);
    expect(await c.subscribe('c1', jobId)).toMatchObject({ type: 'next' });

    // Closing the first socket gives its two places back to the key.
    const first = sockets[0]!;
    first.ws.close();
    await first.closed;
    let n = 0;
    await until(async () => (await b.subscribe(`b3-${++n}`, jobId)).type === 'next', 'a subscribe after the other socket closed');
    expect(b.ws.readyState).toBe(WebSocket.OPEN);
  });
});

describe('many subscriptions on one socket', () => {
  let many: TestApp;
  let owner: TestAccount;
  let manyJobId: string;
  const warnings: Error[] = [];
  const onWarning = (w: Error) => void warnings.push(w);

  beforeAll(async () => {
    many = await startTestApp({ GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET: '30', GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY: '100' });
    owner = await many.createAccountWithKey({ credits: 5 });
    const res = await fetch(`${many.baseUrl}/api/playground/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompts: ['a lantern'] }),
    });
    manyJobId = ((await res.json()) as { jobId: string }).jobId;
    process.on('warning', onWarning);
  });

  afterAll(async () => {
    process.off('warning', onWarning);
    await many.close();
  });

  it('25 open jobStatus subscriptions on one socket raise no MaxListenersExceededWarning', async () => {
    const s = await Socket.open(many.baseUrl, owner.key);
    sockets.push(s);
    for (let i = 0; i < 25; i++) expect(await s.subscribe(`m${i}`, manyJobId)).toMatchObject({ type: 'next', payload: { data: { jobStatus: { status: 'queued' } } } });
    // A warning is emitted on a later tick: a round trip on the socket lets it arrive first.
    s.send({ id: 'q', type: 'subscribe', payload: { query: '{ me { credits } }' } });
    await until(() => s.messages.some((m) => m.id === 'q' && m.type === 'complete'), 'the query completed');
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([]);
  });
});
