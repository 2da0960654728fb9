import 'reflect-metadata';
import { readFile } from 'node:fs/promises';
import { buildClientSchema, getIntrospectionQuery, printSchema } from 'graphql';
import Fastify, { type FastifyInstance } from 'fastify';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import { AppError } from '../../src/domain/errors.js';
import type { JobRecord } from '../../src/domain/jobs/records.js';
import { ImageJobs } from '../../src/domain/jobs/service.js';
import { JobWatcher } from '../../src/domain/jobs/watch.js';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import type { DefinitionService, KeyAuthenticator } from '../../src/domain/ports.js';
import type { KeyPrincipal } from '../../src/domain/principal.js';
import type { GraphQLServices } from '../../src/graphql/context.js';
import { printSchemaFile } from '../../src/graphql/schema.js';
import { Idempotency } from '../../src/domain/idempotency/service.js';
import { registerEdgeAuth } from '../../src/edge/auth.js';
import { createCredentials } from '../../src/edge/credentials.js';
import { MemoryIdempotencyStore } from '../gateway/memory-fakes.js';
import { registerGraphQL, type GraphQLDoor } from '../../src/http/graphql/index.js';
import type { JobEvents, JobListener } from '../../src/queue/job-events.js';
import { MemoryCredits, MemoryJobStore, MemoryQueue } from '../images/memory-fakes.js';
import { until } from '../helpers/until.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';

/**
 * The GraphQL door in isolation: the real ImageJobs service over in-memory stores, fakes for keys and
 * definitions, and an in-process event source the test drives. Transport behaviour only (status codes,
 * CSRF, limits, error masking, WebSocket auth and revocation); the contract against the real gateway
 * and database is in gateway.test.ts.
 */

const KEY_A = `wi_live_${'a'.repeat(64)}`;
const KEY_B = `wi_live_${'b'.repeat(64)}`;

class FakeKeys implements KeyAuthenticator {
  readonly keys = new Map<string, KeyPrincipal & { deleted: boolean }>([
    [KEY_A, { accountId: '0'.repeat(23) + 'a', keyId: '1'.repeat(23) + 'a', deleted: false }],
    [KEY_B, { accountId: '0'.repeat(23) + 'b', keyId: '1'.repeat(23) + 'b', deleted: false }],
  ]);
  private readonly listeners = new Set<(keyId: string, reason: "deleted" | "expired") => void>();

  async authenticate(header: string | undefined): Promise<KeyPrincipal> {
    const m = /^Bearer (\S+)$/.exec(header ?? '');
    if (!m) throw new AppError('missing_authorization');
    if (!/^wi_live_[0-9a-f]{64}$/.test(m[1])) throw new AppError('invalid_api_key_format');
    const k = this.keys.get(m[1]);
    if (!k || k.deleted) throw new AppError('invalid_api_key');
    return { accountId: k.accountId, keyId: k.keyId };
  }
  async admit() {
    return null;
  }
  /** No rate limit configured here. */
  async authenticateWithLimit(header: string | undefined) {
    return { principal: await this.authenticate(header), rateLimit: null };
  }
  async isActive(keyId: string) {
    return [...this.keys.values()].some((k) => k.keyId === keyId && !k.deleted);
  }
  onRevoked(listener: (keyId: string, reason: "deleted" | "expired") => void) {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }
  /** Grants never change here. */
  onGrantChanged() {
    return () => undefined;
  }
  delete(key: string) {
    const k = this.keys.get(key)!;
    k.deleted = true;
    for (const l of this.listeners) l(k.keyId, "deleted");
  }
}

class ManualJobEvents implements JobEvents {
  readonly activeMode = 'changestream' as const;
  private readonly listeners = new Map<string, Set<JobListener>>();
  subscribe(jobId: string, listener: JobListener) {
    const set = this.listeners.get(jobId) ?? new Set();
    this.listeners.set(jobId, set.add(listener));
    return () => void set.delete(listener);
  }
  async ready() {}
  listenerCount() {
    return [...this.listeners.values()].reduce((n, s) => n + s.size, 0);
  }
  emit(job: JobRecord) {
    for (const l of this.listeners.get(job.id) ?? []) l(structuredClone(job));
  }
}

let app: FastifyInstance;
let door: GraphQLDoor;
let url: string;
let keys: FakeKeys;
let events: ManualJobEvents;
let store: MemoryJobStore;
let credits: MemoryCredits;
let definitionImpl: DefinitionService['lookup'];
const clients: Client[] = [];
const logs: Record<string, any>[] = [];

beforeAll(async () => {
  const config = loadConfig({ NODE_ENV: 'test', GRAPHQL_MAX_DEPTH: '3', GRAPHQL_MAX_ALIASES: '3', BODY_LIMIT_BYTES: '2048', LOG_LEVEL: 'silent' });
  keys = new FakeKeys();
  events = new ManualJobEvents();
  store = new MemoryJobStore();
  credits = new MemoryCredits();
  for (const k of keys.keys.values()) credits.balances.set(k.accountId, 10);
  const jobs = new ImageJobs({
    jobs: store,
    credits,
    queue: new MemoryQueue(),
    signer: new ImageUrlSigner('s'.repeat(32), 3600),
    limits: { maxPrompts: config.MAX_PROMPTS, maxPromptLength: config.MAX_PROMPT_LENGTH },
    offer: BUILTIN_OFFER,
  });
  definitionImpl = async (p, keyword) => ({ keyword: String(keyword).trim(), definition: 'a definition', credits: await credits.charge(p.accountId, 1, Math.random().toString()) });
  const services: GraphQLServices = {
    keys,
    jobs,
    jobWatch: new JobWatcher({ jobs, changes: events }),
    definitions: { lookup: (p, k) => definitionImpl(p, k) },
    balances: { balances: async (ids) => ids.map((id) => credits.balances.get(id) ?? null) },
    idempotency: new Idempotency({ store: new MemoryIdempotencyStore() }),
  };
  app = Fastify({ logger: { level: 'error', stream: { write: (line: string) => void logs.push(JSON.parse(line)) } } });
  // The door sits behind the shared edge, which authenticates every request it marks `auth: 'apiKey'`.
  registerEdgeAuth(app, { credentials: createCredentials({ keys }) });
  door = await registerGraphQL(app, { config, services });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  url = `http://127.0.0.1:${port}/graphql`;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await app?.close();
});

async function post(body: unknown, headers: Record<string, string> = { authorization: `Bearer ${KEY_A}` }) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

function wsClient(authorization: string | undefined): Client {
  const client = createClient({
    url: url.replace('http', 'ws'),
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    connectionParams: authorization ? { Authorization: authorization } : {},
  });
  clients.push(client);
  return client;
}

describe('GraphQL over HTTP', () => {
  it('runs lookup and reads the balance through me', async () => {
    const res = await post({ query: 'mutation { lookup(keyword: "  cat ") { keyword definition credits } }' });
    expect(res.status).toBe(200);
    expect(res.body.data.lookup).toEqual({ keyword: 'cat', definition: 'a definition', credits: 9 });
    const me = await post({ query: '{ me { credits } }' });
    expect(me.body.data.me.credits).toBe(9);
  });

  it('refuses the request with 401 and the contract text before anything runs', async () => {
    const cases: [Record<string, string>, string, string][] = [
      [{}, 'Missing or invalid Authorization header', 'missing_authorization'],
      [{ authorization: 'Bearer nope' }, 'Invalid API key format', 'invalid_api_key_format'],
      [{ authorization: `Bearer wi_live_${'c'.repeat(64)}` }, 'Invalid API key', 'invalid_api_key'],
    ];
    for (const [headers, message, reason] of cases) {
      const res = await post({ query: '{ me { credits } }' }, headers);
      expect(res.status).toBe(401);
      expect(res.body.errors).toEqual([{ message, extensions: { code: 'UNAUTHENTICATED', reason } }]);
    }
  });

  it('reports domain errors with status 200, the catalog text and code', async () => {
    const res = await post({ query: 'mutation { generate(prompts: ["x","y","z","w","v","u","t","s","r","q","p"]) { jobId } }' });
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    expect(res.body.errors[0]).toMatchObject({ message: 'Insufficient credits', extensions: { code: 'INSUFFICIENT_CREDITS' }, path: ['generate'] });
    const missing = await post({ query: '{ job(id: "00000000-0000-4000-8000-000000000000") { jobId } }' });
    expect(missing.body.errors[0]).toMatchObject({ message: 'Job not found', extensions: { code: 'NOT_FOUND' } });
  });

  it('masks unexpected errors', async () => {
    const saved = definitionImpl;
    definitionImpl = async () => {
      throw new Error('secret database detail');
    };
    try {
      const res = await post({ query: 'mutation { lookup(keyword: "cat") { keyword } }' });
      expect(res.status).toBe(200);
      expect(res.body.errors).toEqual([{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR', reason: 'internal_error' }, locations: expect.any(Array), path: ['lookup'] }]);
      expect(JSON.stringify(res.body)).not.toContain('secret');
      // The details are in the log, with the request id to find them by.
      const entry = logs.find((l) => l.err?.message === 'secret database detail');
      expect(entry).toMatchObject({ msg: 'graphql: masked internal error', requestId: expect.stringMatching(/^req-/) });
    } finally {
      definitionImpl = saved;
    }
  });

  it('answers document errors, limits and bad variables with 400 BAD_USER_INPUT', async () => {
    const bad = [
      { query: '{ me { credits ' },
      { query: '{ nope }' },
      // GRAPHQL_MAX_ALIASES=3
      { query: '{ a: me { id } b: me { id } c: me { id } d: me { id } }' },
      // GRAPHQL_MAX_DEPTH=3
      { query: '{ jobs { nodes { images { index } } } }' },
      { query: 'query($n: Int!) { jobs(first: $n) { nodes { jobId } } }', variables: { n: 'ten' } },
      { query: 'mutation { generate(prompts: [1, 2]) { jobId } }' },
    ];
    for (const body of bad) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
    const shallow = await post({ query: '{ a: me { id } b: me { credits } jobs { nodes { jobId } } }' });
    expect(shallow.status).toBe(200);
    expect(shallow.body.errors).toBeUndefined();
  });

  it('reports service validation with the REST text and the field', async () => {
    const res = await post({ query: 'mutation { lookup(keyword: "x") { keyword } generate(prompts: []) { jobId } }' });
    expect(res.status).toBe(200);
    expect(res.body.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'prompts' }, path: ['generate'] });
    expect(res.body.errors[0].message).toMatch(/prompts/);
  });

  it('applies CSRF prevention and refuses mutations over GET', async () => {
    const q = encodeURIComponent('{ me { credits } }');
    const noPreflight = await fetch(`${url}?query=${q}`, { headers: { authorization: `Bearer ${KEY_A}` } });
    expect(noPreflight.status).toBe(400);
    const ok = await fetch(`${url}?query=${q}`, { headers: { authorization: `Bearer ${KEY_A}`, 'apollo-require-preflight': 'true' } });
    expect(ok.status).toBe(200);
    const m = encodeURIComponent('mutation { lookup(keyword: "cat") { credits } }');
    const mutation = await fetch(`${url}?query=${m}`, { headers: { authorization: `Bearer ${KEY_A}`, 'apollo-require-preflight': 'true' } });
    expect(mutation.status).toBe(405);
    expect(((await mutation.json()) as any).errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it('limits the body size with a GraphQL-shaped 413', async () => {
    const res = await post({ query: `{ me { credits } } # ${'x'.repeat(4000)}` });
    expect(res.status).toBe(413);
    expect(res.body.errors[0]).toEqual({ message: 'Request body too large', extensions: { code: 'BAD_USER_INPUT', reason: 'payload_too_large' } });
  });
});

describe('schema.graphql', () => {
  it('is the schema the server serves, byte for byte (run `npm run schema` when this fails)', async () => {
    const file = await readFile(new URL('../../schema.graphql', import.meta.url), 'utf8');
    expect(printSchemaFile(door.schema)).toBe(file);
    // And what a client sees by introspection prints the same.
    // (GET: this app's body limit is set tiny for the 413 test.)
    const query = encodeURIComponent(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true }));
    const res = await fetch(`${url}?query=${query}`, { headers: { authorization: `Bearer ${KEY_A}`, 'apollo-require-preflight': '1' } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(`${printSchema(buildClientSchema(body.data))}\n`).toBe(file);
  });
});

describe('GRAPHQL_INTROSPECTION=false', () => {
  it('refuses introspection and hides field suggestions, over HTTP and WebSocket', async () => {
    const config = loadConfig({ NODE_ENV: 'test', GRAPHQL_INTROSPECTION: 'false', LOG_LEVEL: 'silent' });
    const closed = Fastify({ logger: false });
    const services: GraphQLServices = {
      keys,
      jobs: { create: async () => ({}) as never, get: async () => ({}) as never, getMany: async () => [], list: async () => ({ items: [], nextCursor: null }), viewOf: () => null, cancel: async () => ({}) as never, imageOptions: () => BUILTIN_OFFER },
      jobWatch: { watch: async () => ({}) as never },
      definitions: { lookup: (p, k) => definitionImpl(p, k) },
      balances: { balances: async (ids) => ids.map(() => 1) },
      idempotency: new Idempotency({ store: new MemoryIdempotencyStore() }),
    };
    registerEdgeAuth(closed, { credentials: createCredentials({ keys }) });
    await registerGraphQL(closed, { config, services });
    await closed.listen({ port: 0, host: '127.0.0.1' });
    try {
      const { port } = closed.server.address() as { port: number };
      const endpoint = `http://127.0.0.1:${port}/graphql`;
      const ask = async (query: string) => {
        const res = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` }, body: JSON.stringify({ query }) });
        return { status: res.status, body: (await res.json()) as any };
      };
      const intro = await ask('{ __schema { types { name } } }');
      expect(intro.status).toBe(400);
      expect(intro.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      const typo = await ask('{ mee { credits } }');
      expect(typo.status).toBe(400);
      expect(typo.body.errors[0].message).toBe('Cannot query field "mee" on type "Query".');
      expect((await ask('{ me { credits } }')).body.data.me.credits).toBe(1);

      const client = createClient({ url: endpoint.replace('http', 'ws'), webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { Authorization: `Bearer ${KEY_A}` } });
      clients.push(client);
      const wsResult = await new Promise<any>((resolve) => {
        client.subscribe({ query: '{ __schema { types { name } } }' }, { next: resolve, error: resolve, complete: () => undefined });
      });
      expect(wsResult.length).toBeGreaterThan(0);
      for (const e of wsResult) expect(e).toMatchObject({ message: expect.stringMatching(/introspection/i), extensions: { code: 'BAD_USER_INPUT' } });
      const wsTypo = await new Promise<any>((resolve) => {
        client.subscribe({ query: '{ mee { credits } }' }, { next: resolve, error: resolve, complete: () => undefined });
      });
      expect(wsTypo[0]).toMatchObject({ message: 'Cannot query field "mee" on type "Query".', extensions: { code: 'BAD_USER_INPUT' } });
    } finally {
      await closed.close();
    }
  });
});

describe('GraphQL over WebSocket', () => {
  it('closes a connection with a bad key with 4401 before any subscription runs', async () => {
    for (const auth of [undefined, 'Bearer nope', `Bearer wi_live_${'c'.repeat(64)}`]) {
      const client = wsClient(auth);
      const outcome = await new Promise<{ code?: number; reason?: string; data?: unknown }>((resolve) => {
        client.subscribe(
          { query: '{ me { credits } }' },
          { next: (data) => resolve({ data }), error: (e: any) => resolve({ code: e?.code, reason: e?.reason }), complete: () => undefined },
        );
      });
      expect(outcome.data).toBeUndefined();
      expect(outcome.code).toBe(4401);
    }
  });

  it('pushes the current state, every change, then completes after the final state', async () => {
    const created = await post({ query: 'mutation { generate(prompts: ["a","b"]) { jobId } }' });
    const jobId: string = created.body.data.generate.jobId;
    const client = wsClient(`Bearer ${KEY_A}`);
    const seen: any[] = [];
    const done = new Promise<void>((resolve, reject) => {
      client.subscribe(
        { query: `subscription { jobStatus(jobId: "${jobId}") { status succeededImages failedImages images { status url } } }` },
        { next: (r) => seen.push(r), error: reject, complete: resolve },
      );
    });
    await until(() => seen.length === 1 && events.listenerCount() === 1);
    const job = store.docs.get(jobId)!;
    const step = (mutate: (j: JobRecord) => void) => {
      mutate(job);
      job.updatedAt = new Date(job.updatedAt.getTime() + 1);
      events.emit(job);
    };
    events.emit(job); // duplicate of the current state: not pushed again
    step((j) => ((j.status = 'running'), (j.images[0].status = 'running')));
    step((j) => ((j.images[0].status = 'succeeded'), (j.images[0].fileId = 'f'), (j.succeededImages = 1)));
    step((j) => ((j.images[1].status = 'failed'), (j.images[1].error = 'boom'), (j.failedImages = 1)));
    step((j) => (j.status = 'completed'));
    await done;
    expect(seen.map((r) => r.data.jobStatus.status)).toEqual(['queued', 'running', 'running', 'running', 'completed']);
    expect(seen[2].data.jobStatus.images[0].url).toMatch(/\/api\/playground\/images\/.+\/images\/0\?expires=/);
    expect(events.listenerCount()).toBe(0);
  });

  it('releases the job listener as soon as the client unsubscribes', async () => {
    const created = await post({ query: 'mutation { generate(prompts: ["a"]) { jobId } }' });
    const client = wsClient(`Bearer ${KEY_A}`);
    const seen: unknown[] = [];
    const unsubscribe = client.subscribe(
      { query: `subscription { jobStatus(jobId: "${created.body.data.generate.jobId}") { status } }` },
      { next: (r) => seen.push(r), error: () => undefined, complete: () => undefined },
    );
    await until(() => seen.length === 1 && events.listenerCount() === 1);
    unsubscribe();
    await until(() => events.listenerCount() === 0);
  });

  it("treats another account's job as not found", async () => {
    const created = await post({ query: 'mutation { generate(prompts: ["a"]) { jobId } }' });
    const client = wsClient(`Bearer ${KEY_B}`);
    const result = await new Promise<any>((resolve, reject) => {
      client.subscribe(
        { query: `subscription { jobStatus(jobId: "${created.body.data.generate.jobId}") { status } }` },
        { next: resolve, error: reject, complete: () => undefined },
      );
    });
    expect(result.errors).toEqual([expect.objectContaining({ message: 'Job not found', extensions: { code: 'NOT_FOUND', reason: 'job_not_found' } })]);
  });

  it('ends the subscription when its key is deleted', async () => {
    const created = await post({ query: 'mutation { generate(prompts: ["a"]) { jobId } }' }, { authorization: `Bearer ${KEY_B}` });
    const client = wsClient(`Bearer ${KEY_B}`);
    const seen: any[] = [];
    const ended = new Promise<any>((resolve) => {
      client.subscribe(
        { query: `subscription { jobStatus(jobId: "${created.body.data.generate.jobId}") { status } }` },
        { next: (r) => seen.push(r), error: resolve, complete: () => resolve('completed') },
      );
    });
    await until(() => seen.length === 1);
    keys.delete(KEY_B);
    const reason = await ended;
    expect(reason).toEqual([expect.objectContaining({ message: 'Invalid API key', extensions: { code: 'UNAUTHENTICATED', reason: 'invalid_api_key' } })]);
    expect(events.listenerCount()).toBe(0);
  });
});
