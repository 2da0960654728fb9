import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import { Collection } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * GraphQL against the real gateway on the test database: the same texts and codes as REST, DataLoader
 * batching (counted database calls), and `jobStatus` over a real graphql-ws client with the image
 * worker running in another process.
 */

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
let t: TestApp;
let acct: TestAccount;
const clients: Client[] = [];
const workers: ChildProcess[] = [];

beforeAll(async () => {
  t = await startTestApp();
  acct = await t.createAccountWithKey({ credits: 1000 });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await Promise.all(workers.map(stopWorker));
  await t?.close();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function gql(query: string, variables?: Record<string, unknown>, headers: Record<string, string> = bearer(acct.key)) {
  const res = await fetch(`${t.baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query, variables }) });
  return { status: res.status, body: (await res.json()) as any };
}

async function rest(method: 'GET' | 'POST', pathName: string, body?: unknown, headers: Record<string, string> = bearer(acct.key)) {
  const res = await fetch(`${t.baseUrl}${pathName}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

function wsClient(authorization?: string): Client {
  const client = createClient({
    url: `${t.baseUrl.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: authorization ? { Authorization: authorization } : {},
  });
  clients.push(client);
  return client;
}

/** An image worker in its own process, on this file's database. */
function startWorker(): ChildProcess {
  const uri = new URL(t.config.MONGODB_URI!);
  uri.pathname = `/${t.connection.name}`;
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'workers/main.ts')], {
    cwd: root,
    env: { ...process.env, MONGODB_URI: uri.toString(), LOG_LEVEL: process.env.WORKER_LOG_LEVEL ?? 'error', NODE_ENV: 'test' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  workers.push(child);
  return child;
}

function ensureWorker(): void {
  if (!workers.some((w) => w.exitCode === null && w.signalCode === null)) startWorker();
}

async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

interface Received {
  messages: any[];
  done: Promise<'complete' | unknown>;
}

function subscribeJob(client: Client, jobId: string, fields = 'jobId status updatedAt succeededImages failedImages completedAt images { index status url }'): Received {
  const messages: any[] = [];
  const done = new Promise<'complete' | unknown>((resolve) => {
    client.subscribe(
      { query: `subscription($id: ID!) { jobStatus(jobId: $id) { ${fields} } }`, variables: { id: jobId } },
      { next: (m) => messages.push(m), error: (e) => resolve(e), complete: () => resolve('complete') },
    );
  });
  return { messages, done };
}

describe('the same errors as REST', () => {
  it('the three 401s: same text, UNAUTHENTICATED, HTTP 401', async () => {
    const cases: Record<string, string>[] = [{}, { authorization: 'Basic abc' }, bearer('wi_live_short'), bearer(`wi_live_${'f'.repeat(64)}`)];
    const texts = new Set<string>();
    for (const headers of cases) {
      const r = await rest('POST', '/api/playground/query', { keyword: 'cat' }, headers);
      const g = await gql('mutation { lookup(keyword: "cat") { credits } }', undefined, headers);
      expect(r.status).toBe(401);
      expect(g.status).toBe(401);
      expect(g.body.errors).toEqual([{ message: r.body.error, extensions: { code: 'UNAUTHENTICATED', reason: r.body.code } }]);
      texts.add(r.body.error);
    }
    expect([...texts].sort()).toEqual(['Invalid API key', 'Invalid API key format', 'Missing or invalid Authorization header']);
  });

  it('malformed bodies: 400 / 413 / 415 with the REST texts', async () => {
    const send = async (p: string, contentType: string, body: string) => {
      const res = await fetch(`${t.baseUrl}${p}`, { method: 'POST', headers: { 'content-type': contentType, ...bearer(acct.key) }, body });
      return { status: res.status, body: (await res.json()) as any };
    };
    const cases: [string, string, number][] = [
      ['application/json', '{"query": ', 400],
      ['text/plain', '{"query":"{ me { id } }"}', 415],
      ['application/json', JSON.stringify({ query: `{ me { id } } #${'x'.repeat(t.config.BODY_LIMIT_BYTES)}` }), 413],
    ];
    for (const [type, body, status] of cases) {
      const r = await send('/api/playground/query', type, body);
      const g = await send('/graphql', type, body);
      expect([r.status, g.status]).toEqual([status, status]);
      expect(g.body.errors).toEqual([{ message: r.body.error, extensions: { code: 'BAD_USER_INPUT', reason: r.body.code } }]);
      // Check order: authentication comes first, whatever is wrong with the body.
      const anonymous = await fetch(`${t.baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': type }, body });
      expect(anonymous.status).toBe(401);
      expect(((await anonymous.json()) as any).errors[0].message).toBe('Missing or invalid Authorization header');
    }
  });

  it('402: same text, INSUFFICIENT_CREDITS, nothing charged', async () => {
    const poor = await t.createAccountWithKey({ credits: 1 });
    const r = await rest('POST', '/api/playground/images', { prompts: ['a', 'b'] }, bearer(poor.key));
    const g = await gql('mutation { generate(prompts: ["a", "b"]) { jobId } }', undefined, bearer(poor.key));
    expect(r.status).toBe(402);
    expect(g.body.errors).toEqual([expect.objectContaining({ message: r.body.error, extensions: { code: 'INSUFFICIENT_CREDITS', reason: r.body.code }, path: ['generate'] })]);
    expect(g.body.data).toBeNull();
    const me = await gql('{ me { credits } }', undefined, bearer(poor.key));
    expect(me.body.data.me.credits).toBe(1);
  });

  it('400s: same text per field and rule, BAD_USER_INPUT', async () => {
    const cases: { restPath: string; restBody: unknown; query: string; variables: Record<string, unknown>; field: string }[] = [
      { restPath: '/api/playground/query', restBody: { keyword: '   ' }, query: 'mutation($k: String!) { lookup(keyword: $k) { credits } }', variables: { k: '   ' }, field: 'keyword' },
      { restPath: '/api/playground/query', restBody: { keyword: 'x'.repeat(101) }, query: 'mutation($k: String!) { lookup(keyword: $k) { credits } }', variables: { k: 'x'.repeat(101) }, field: 'keyword' },
      { restPath: '/api/playground/images', restBody: { prompts: [] }, query: 'mutation($p: [String!]!) { generate(prompts: $p) { jobId } }', variables: { p: [] }, field: 'prompts' },
      { restPath: '/api/playground/images', restBody: { prompts: Array(51).fill('a') }, query: 'mutation($p: [String!]!) { generate(prompts: $p) { jobId } }', variables: { p: Array(51).fill('a') }, field: 'prompts' },
      { restPath: '/api/playground/images', restBody: { prompts: ['ok', '  '] }, query: 'mutation($p: [String!]!) { generate(prompts: $p) { jobId } }', variables: { p: ['ok', '  '] }, field: 'prompts' },
      { restPath: '/api/playground/images', restBody: { prompts: ['x'.repeat(2001)] }, query: 'mutation($p: [String!]!) { generate(prompts: $p) { jobId } }', variables: { p: ['x'.repeat(2001)] }, field: 'prompts' },
    ];
    const before = (await gql('{ me { credits } }')).body.data.me.credits;
    for (const c of cases) {
      const r = await rest('POST', c.restPath, c.restBody);
      const g = await gql(c.query, c.variables);
      expect(r.status, JSON.stringify(c.restBody).slice(0, 60)).toBe(400);
      expect(g.status).toBe(200);
      expect(g.body.errors[0].message).toBe(r.body.error);
      expect(g.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(g.body.errors[0].message).toContain(c.field);
    }
    expect((await gql('{ me { credits } }')).body.data.me.credits).toBe(before);
  });

  it("404: unknown, malformed and another account's job ids, same text, NOT_FOUND", async () => {
    const other = await t.createAccountWithKey({ credits: 5 });
    const theirs = await gql('mutation { generate(prompts: ["theirs"]) { jobId } }', undefined, bearer(other.key));
    const ids = ['0b9a3c36-7a4b-4d4b-9a4e-3f1f6a1c2b3d', 'not-a-uuid', theirs.body.data.generate.jobId];
    for (const id of ids) {
      const r = await rest('GET', `/api/playground/images/${encodeURIComponent(id)}`);
      const g = await gql('query($id: ID!) { job(id: $id) { jobId } }', { id });
      expect(r.status).toBe(404);
      expect(g.body.errors).toEqual([expect.objectContaining({ message: r.body.error, extensions: { code: 'NOT_FOUND', reason: r.body.code }, path: ['job'] })]);
    }
  });
});

describe('SERVICES', () => {
  it('a definitions-only deployment answers image operations as REST answers image routes', async () => {
    const defsOnly = await startTestApp({ SERVICES: 'definitions' });
    try {
      const a = await defsOnly.createAccountWithKey({ credits: 5 });
      const post = (p: string, body: unknown) =>
        fetch(`${defsOnly.baseUrl}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(a.key) }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
      const restImages = await post('/api/playground/images', { prompts: ['a'] });
      const g = await post('/graphql', { query: 'mutation { generate(prompts: ["a"]) { jobId } }' });
      expect(restImages.status).toBe(404);
      expect(g.body.errors).toEqual([expect.objectContaining({ message: restImages.body.error, extensions: { code: 'NOT_FOUND', reason: restImages.body.code } })]);
      const lookup = await post('/graphql', { query: 'mutation { lookup(keyword: "cat") { credits } }' });
      expect(lookup.body.data.lookup.credits).toBe(4);
    } finally {
      await defsOnly.close();
    }
  });
});

describe('rate limit (RATE_LIMIT_PER_MINUTE)', () => {
  it('counts every HTTP request and every WebSocket operation against the key: 429 / RATE_LIMITED', async () => {
    const limited = await startTestApp({ RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const a = await limited.createAccountWithKey({ credits: 10 });
      const ask = () =>
        fetch(`${limited.baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(a.key) }, body: JSON.stringify({ query: '{ me { credits } }' }) });
      for (let i = 0; i < 3; i++) expect((await ask()).status).toBe(200);
      const refused = await ask();
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await refused.json()) as any).errors).toEqual([{ message: 'Too many requests', extensions: { code: 'RATE_LIMITED', reason: 'rate_limited', retryAfter: expect.any(Number) } }]);

      const b = await limited.createAccountWithKey({ credits: 10 });
      const client = createClient({ url: `${limited.baseUrl.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { Authorization: `Bearer ${b.key}` } });
      clients.push(client);
      const once = () =>
        new Promise<any>((resolve) => {
          client.subscribe({ query: '{ me { credits } }' }, { next: resolve, error: resolve, complete: () => undefined });
        });
      // connection_init takes one, then two operations; the third is refused.
      expect((await once()).data.me.credits).toBe(10);
      expect((await once()).data.me.credits).toBe(10);
      expect(await once()).toEqual([expect.objectContaining({ message: 'Too many requests', extensions: expect.objectContaining({ code: 'RATE_LIMITED' }) })]);
    } finally {
      await limited.close();
    }
  });
});

describe('operations', () => {
  it('generate and job(id) give what REST gives', async () => {
    const before = (await gql('{ me { credits } }')).body.data.me.credits;
    const g = await gql('mutation { generate(prompts: ["a red fox", "a blue owl"]) { jobId totalImages creditsUsed credits } }');
    expect(g.body.data.generate).toMatchObject({ totalImages: 2, creditsUsed: 2, credits: before - 2 });
    const jobId = g.body.data.generate.jobId;
    const fields =
      'jobId status totalImages succeededImages failedImages creditsUsed creditsRefunded createdAt updatedAt completedAt ' +
      'options { size format seed negativePrompt } images { index prompt status url error width height contentType seed expired }';
    const viaGraphql = (await gql(`query($id: ID!) { job(id: $id) { ${fields} } }`, { id: jobId })).body.data.job;
    const viaRest = (await rest('GET', `/api/playground/images/${jobId}`)).body;
    // The same fields; only the format is spelled as GraphQL enums are (PNG for png).
    expect(viaGraphql).toEqual({ ...viaRest, options: { ...viaRest.options, format: viaRest.options.format.toUpperCase() } });
  });

  it('lookup charges one credit and echoes the trimmed keyword', async () => {
    const before = (await gql('{ me { credits } }')).body.data.me.credits;
    const g = await gql('mutation { lookup(keyword: "  dog ") { keyword definition credits } }');
    expect(g.body.data.lookup.keyword).toBe('dog');
    expect(g.body.data.lookup.definition.length).toBeGreaterThan(10);
    expect(g.body.data.lookup.credits).toBe(before - 1);
  });

  it('pages through the caller’s jobs, newest first', async () => {
    const fresh = await t.createAccountWithKey({ credits: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await gql('mutation { generate(prompts: ["p"]) { jobId } }', undefined, bearer(fresh.key))).body.data.generate.jobId);
    const page1 = (await gql('{ jobs(first: 2) { nodes { jobId } pageInfo { hasNextPage endCursor } } }', undefined, bearer(fresh.key))).body.data.jobs;
    expect(page1.nodes.map((n: any) => n.jobId)).toEqual([ids[2], ids[1]]);
    expect(page1.pageInfo.hasNextPage).toBe(true);
    const page2 = (await gql('query($a: String) { jobs(first: 2, after: $a) { nodes { jobId } pageInfo { hasNextPage endCursor } } }', { a: page1.pageInfo.endCursor }, bearer(fresh.key))).body
      .data.jobs;
    expect(page2).toEqual({ nodes: [{ jobId: ids[0] }], pageInfo: { hasNextPage: false, endCursor: null } });
    const bad = await gql('{ jobs(first: 0) { nodes { jobId } } }', undefined, bearer(fresh.key));
    expect(bad.body.errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'first' } });
  });
});

/**
 * Counts every operation sent through the MongoDB driver's Collection (mongoose models and the native
 * collections the stores use alike), by collection name, while `fn` runs.
 */
async function countDatabaseCalls<T>(fn: () => Promise<T>): Promise<{ result: T; calls: { collection: string; method: string }[] }> {
  const methods = ['find', 'findOne', 'findOneAndUpdate', 'findOneAndReplace', 'findOneAndDelete', 'updateOne', 'updateMany', 'replaceOne', 'insertOne', 'insertMany', 'deleteOne', 'deleteMany', 'aggregate', 'countDocuments', 'bulkWrite', 'distinct'] as const;
  const calls: { collection: string; method: string }[] = [];
  const proto = Collection.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = new Map(methods.map((m) => [m, proto[m]]));
  for (const m of methods) {
    const original = originals.get(m)!;
    proto[m] = function (this: Collection, ...args: unknown[]) {
      calls.push({ collection: this.collectionName, method: m });
      return original.apply(this, args);
    };
  }
  try {
    return { result: await fn(), calls };
  } finally {
    for (const m of methods) proto[m] = originals.get(m)!;
  }
}

describe('DataLoader', () => {
  it('resolves many jobs and balances of one operation in one database call each (no N+1)', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await gql('mutation { generate(prompts: ["n+1"]) { jobId } }')).body.data.generate.jobId);
    const aliases = ids.map((id, i) => `j${i}: job(id: "${id}") { jobId status images { status } }`).join('\n');
    const query = `{ ${aliases}\n again: job(id: "${ids[0]}") { jobId }\n m1: me { credits } m2: me { credits } m3: me { credits } }`;

    const { result: res, calls } = await countDatabaseCalls(() => gql(query));
    expect(res.body.errors).toBeUndefined();
    expect(ids.map((_, i) => res.body.data[`j${i}`].jobId)).toEqual(ids);
    expect(res.body.data.m1.credits).toBe(res.body.data.m3.credits);
    const on = (name: string) => calls.filter((c) => c.collection === name);
    // Six job fields and three balance fields: one batched read each.
    expect(on('jobs')).toEqual([{ collection: 'jobs', method: 'find' }]);
    expect(on('accounts')).toHaveLength(1);

    // Three different jobs: still one read.
    const twice = await countDatabaseCalls(() => gql(`{ a: job(id: "${ids[1]}") { jobId } b: job(id: "${ids[2]}") { jobId } c: job(id: "${ids[3]}") { jobId } }`));
    expect(twice.calls.filter((c) => c.collection === 'jobs')).toHaveLength(1);

    // Loaders are per operation: the same job in the next request is read again (no cross-request cache).
    const next = await countDatabaseCalls(() => gql(`{ again: job(id: "${ids[0]}") { jobId } }`));
    expect(next.calls.filter((c) => c.collection === 'jobs')).toHaveLength(1);
  });

  it('a jobs page and job(id) of the same jobs in one operation: one list read, no per-item reads', async () => {
    const fresh = await t.createAccountWithKey({ credits: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await gql('mutation { generate(prompts: ["page"]) { jobId } }', undefined, bearer(fresh.key))).body.data.generate.jobId);
    const query = `{ jobs(first: 10) { nodes { jobId images { status } } } ${ids.map((id, i) => `j${i}: job(id: "${id}") { status }`).join(' ')} }`;
    // job(id) fields resolve in parallel with jobs: at most one batched read for them besides the list.
    const { result, calls } = await countDatabaseCalls(() => gql(query, undefined, bearer(fresh.key)));
    expect(result.body.data.jobs.nodes).toHaveLength(4);
    expect(calls.filter((c) => c.collection === 'jobs').length).toBeLessThanOrEqual(2);
  });
});

describe('jobStatus over WebSocket', () => {
  it('refuses a bad or deleted key at connection_init with 4401', async () => {
    const doomed = await t.createAccountWithKey({ credits: 1 });
    await t.services.keys.delete(doomed.keyId, { actor: 'test', ip: '127.0.0.1', host: 'test-host' });
    for (const auth of [undefined, 'Bearer wi_live_short', `Bearer wi_live_${'e'.repeat(64)}`, `Bearer ${doomed.key}`]) {
      const client = wsClient(auth);
      const r = subscribeJob(client, '0b9a3c36-7a4b-4d4b-9a4e-3f1f6a1c2b3d', 'status');
      const outcome: any = await r.done;
      expect(r.messages).toEqual([]);
      expect(outcome.code).toBe(4401);
    }
  });

  it('ends the subscription when the key is deleted meanwhile', async () => {
    const victim = await t.createAccountWithKey({ credits: 5 });
    const jobId = (await gql('mutation { generate(prompts: ["v"]) { jobId } }', undefined, bearer(victim.key))).body.data.generate.jobId;
    const client = wsClient(`Bearer ${victim.key}`);
    const r = subscribeJob(client, jobId, 'status');
    await until(() => r.messages.length === 1);
    await t.services.keys.delete(victim.keyId, { actor: 'test', ip: '127.0.0.1', host: 'test-host' });
    const outcome = await r.done;
    expect(outcome).toEqual([expect.objectContaining({ message: 'Invalid API key', extensions: { code: 'UNAUTHENTICATED', reason: 'invalid_api_key' } })]);
  });

  it('100 concurrent subscribers to one job all receive its completion (one watcher)', async () => {
    const jobId = (await gql('mutation { generate(prompts: ["crowd 1", "crowd 2"]) { jobId } }')).body.data.generate.jobId;
    const listenersBefore = t.services.jobEvents.listenerCount();
    const subs = Array.from({ length: 100 }, () => subscribeJob(wsClient(`Bearer ${acct.key}`), jobId, 'status succeededImages'));
    // Every subscriber has the current state before the worker starts, so none joins after the end.
    await until(() => subs.every((s) => s.messages.length >= 1));
    expect(t.services.jobEvents.listenerCount()).toBe(listenersBefore + 100);
    // One watcher for all of them: the change stream where the deployment has one (the embedded server does).
    const probe = t.connection.db!.collection('jobs').watch([], { maxAwaitTimeMS: 1 });
    const streams = await probe.tryNext().then(
      () => true,
      () => false,
    );
    await probe.close().catch(() => undefined);
    expect(t.services.jobEvents.activeMode).toBe(streams ? 'changestream' : 'poll');
    startWorker();
    const outcomes = await Promise.all(subs.map((s) => s.done));
    expect(outcomes.every((o) => o === 'complete')).toBe(true);
    for (const s of subs) {
      expect(s.messages[0].data.jobStatus.status).toBe('queued');
      expect(s.messages.at(-1).data.jobStatus).toEqual({ status: 'completed', succeededImages: 2 });
    }
    await until(() => t.services.jobEvents.listenerCount() === listenersBefore);
  });

  it('pushes every image transition from a worker in another process, then completes', async () => {
    // The subscriber has the queued state before any worker runs: a fast worker cannot finish first.
    await Promise.all(workers.map(stopWorker));
    const jobId = (await gql('mutation { generate(prompts: ["one", "two", "three"]) { jobId } }')).body.data.generate.jobId;
    const r = subscribeJob(wsClient(`Bearer ${acct.key}`), jobId);
    await until(() => r.messages.length >= 1, 'the current state');
    expect(r.messages[0].data.jobStatus.status).toBe('queued');
    startWorker();
    expect(await r.done).toBe('complete');
    const states = r.messages.map((m) => m.data.jobStatus);
    const last = states.at(-1);
    expect(last).toMatchObject({ jobId, status: 'completed', succeededImages: 3, failedImages: 0 });
    expect(last.completedAt).not.toBeNull();
    for (const img of last.images) expect(img.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/playground\/images\//);
    // Each image was seen reaching `succeeded`, and the counts only ever grew, one message per change.
    for (const index of [0, 1, 2]) expect(states.some((s) => s.images[index].status === 'succeeded')).toBe(true);
    for (let i = 1; i < states.length; i++) {
      expect(Date.parse(states[i].updatedAt)).toBeGreaterThanOrEqual(Date.parse(states[i - 1].updatedAt));
      expect(states[i].succeededImages).toBeGreaterThanOrEqual(states[i - 1].succeededImages);
      expect(JSON.stringify(states[i])).not.toBe(JSON.stringify(states[i - 1]));
    }
    // Three images finishing one by one: at least one push per image success after the first message.
    const successes = new Set(states.map((s) => s.succeededImages));
    expect(successes.size).toBeGreaterThanOrEqual(2);
  });

  it('a subscriber joining after the end gets the final state and completes', async () => {
    ensureWorker();
    const jobId = (await gql('mutation { generate(prompts: ["late"]) { jobId } }')).body.data.generate.jobId;
    await until(async () => (await gql('query($id: ID!) { job(id: $id) { status } }', { id: jobId })).body.data.job.status === 'completed');
    const r = subscribeJob(wsClient(`Bearer ${acct.key}`), jobId, 'status');
    expect(await r.done).toBe('complete');
    expect(r.messages.map((m) => m.data.jobStatus.status)).toEqual(['completed']);
  });

  it('never pushes an older job: subscriptions opened mid-job on two gateways, one after another until the job ends', async () => {
    const second = await startTestApp();
    ensureWorker();
    const rank: Record<string, number> = { queued: 0, running: 1, succeeded: 2, failed: 2, canceled: 2, completed: 2 };
    const fields = 'status succeededImages failedImages images { index status }';
    let subscriptions = 0;
    let midJob = 0;
    try {
      for (let job = 0; job < 3; job++) {
        const prompts = Array.from({ length: 12 }, (_, i) => `order ${job}-${i}`);
        const jobId = (await gql('mutation($p: [String!]!) { generate(prompts: $p) { jobId } }', { p: prompts })).body.data.generate.jobId;
        const all: Received[] = [];
        // A new subscription, on alternating gateways, as soon as the previous one has its first value,
        // until one starts with the final state: each opens at whatever moment of the job that is.
        for (let n = 0; ; n++) {
          const base = n % 2 ? second.baseUrl : t.baseUrl;
          const client = createClient({ url: `${base.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true, connectionParams: { Authorization: `Bearer ${acct.key}` } });
          clients.push(client);
          const r = subscribeJob(client, jobId, fields);
          all.push(r);
          await until(() => r.messages.length >= 1, 'the first value');
          const first = r.messages[0].data.jobStatus;
          if (first.status === 'running') midJob++;
          if (first.status === 'completed') break;
        }
        for (const r of all) expect(await r.done).toBe('complete');
        for (const r of all) {
          const states = r.messages.map((m) => m.data.jobStatus);
          for (let i = 1; i < states.length; i++) {
            const [a, b] = [states[i - 1], states[i]];
            const where = `job ${job}, push ${i}: ${JSON.stringify(a)} then ${JSON.stringify(b)}`;
            expect(rank[b.status], where).toBeGreaterThanOrEqual(rank[a.status]);
            expect(b.succeededImages, where).toBeGreaterThanOrEqual(a.succeededImages);
            expect(b.failedImages, where).toBeGreaterThanOrEqual(a.failedImages);
            for (const img of b.images) expect(rank[img.status], where).toBeGreaterThanOrEqual(rank[a.images[img.index].status]);
          }
          expect(states.at(-1)).toMatchObject({ status: 'completed', succeededImages: 12 });
        }
        subscriptions += all.length;
      }
      expect(midJob, `${subscriptions} subscriptions`).toBeGreaterThanOrEqual(1);
    } finally {
      await second.close();
    }
  });

  it('works with the polling fallback on a second gateway instance', async () => {
    const polling = await startTestApp({ JOB_EVENTS: 'poll', JOB_EVENTS_POLL_MS: '100' });
    ensureWorker();
    try {
      const jobId = (await gql('mutation { generate(prompts: ["polled 1", "polled 2"]) { jobId } }')).body.data.generate.jobId;
      const client = createClient({ url: `${polling.baseUrl.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { Authorization: `Bearer ${acct.key}` } });
      clients.push(client);
      const r = subscribeJob(client, jobId, 'status succeededImages');
      expect(await r.done).toBe('complete');
      expect(r.messages.at(-1).data.jobStatus).toEqual({ status: 'completed', succeededImages: 2 });
      expect(polling.services.jobEvents.activeMode).toBe('poll');
    } finally {
      await polling.close();
    }
  });
});
