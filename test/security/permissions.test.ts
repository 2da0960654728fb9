import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../src/domain/trusted-documents/service.js';
/**
 * The key permission matrix, generated from the operation catalog: every operation, on every door
 * that serves it (each REST route of its row, its GraphQL root field over HTTP, or over WebSocket for
 * a subscription), is refused for a key that has every permission but the one it needs (403
 * `key_permission`, GraphQL FORBIDDEN with reason `key_permission` before any field runs), charges
 * nothing, and succeeds for a key that has only that permission. An operation added to the catalog
 * without a case here fails the first test.
 */
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { KEY_PERMISSIONS, type KeyPermission } from '../../src/domain/keys/permissions.js';
import { costOf, OPERATION_NAMES, OPERATIONS, type OperationName, type OperationSpec } from '../../src/domain/operations/catalog.js';
import { ScriptedProvider } from '../gateway/fakes.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

const APP = 'http://127.0.0.1:5173';
const actor = { actor: 'test', ip: null, host: 'test' };

/** What each operation is called with: its REST body, its GraphQL document, and what it costs when it runs. */
interface Case {
  body?: Record<string, unknown>;
  graphql?: (ctx: Fixture) => string;
  /** Units charged when it succeeds (generate: its prompts). */
  units?: number;
  /** Credits it gives back when it succeeds (a cancel refunds the fixture job's queued image). */
  refunds?: number;
  /** Permissions the successful call needs besides the operation's own (a client token needs a scope its key has). */
  alsoNeeds?: KeyPermission[];
}

interface Fixture {
  jobId: string;
  webhookId: string;
  documentId: string;
}

const TRUSTED = 'query Trusted { me { credits } }';

const CASES: Record<OperationName, Case> = {
  lookup: { body: { keyword: 'oak' }, graphql: () => 'mutation { lookup(keyword: "oak") { keyword credits } }', units: 1 },
  generate: { body: { prompts: ['a heron', 'a kite'] }, graphql: () => 'mutation { generate(prompts: ["a heron", "a kite"]) { jobId creditsUsed } }', units: 2 },
  cancelJob: { graphql: (f) => `mutation { cancelJob(id: "${f.jobId}") { id status } }`, refunds: costOf('generate', 1) },
  job: { graphql: (f) => `{ job(id: "${f.jobId}") { id status } }` },
  imageOptions: { graphql: () => '{ imageOptions { sizes formats seed } }' },
  jobs: { graphql: () => '{ jobs(first: 1) { nodes { id } } }' },
  jobStatus: { graphql: (f) => `subscription { jobStatus(jobId: "${f.jobId}") { id status } }` },
  me: { graphql: () => '{ me { id credits } }' },
  createClientToken: { body: { origins: [APP] }, graphql: () => `mutation { createClientToken(origins: ["${APP}"]) { token scopes } }`, alsoNeeds: ['read'] },
  registerDocuments: { body: { format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: sha256Hex(TRUSTED), name: 'Trusted', type: 'query', body: TRUSTED }] } },
  listDocuments: {},
  deleteDocument: {},
  createWebhook: { body: { url: 'http://127.0.0.1:9/hooks' } },
  listWebhooks: {},
  deleteWebhook: {},
};

let t: TestApp;
/** The account the current test works in: a fresh one per test (an account holds at most 20 webhooks). */
let accountId: string;
const sockets: ReturnType<typeof createClient>[] = [];

beforeAll(async () => {
  t = await startTestApp({ IN_PROCESS_WORKER: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', deps: { definitionProvider: new ScriptedProvider() } });
});
beforeEach(async () => {
  accountId = (await t.services.credits.createAccount('permissions', 1000, actor)).id;
});
afterAll(async () => {
  for (const s of sockets) await s.dispose();
  await t?.close();
});

async function keyWith(permissions: readonly KeyPermission[]): Promise<{ id: string; key: string }> {
  return t.services.keys.create(accountId, `only ${permissions.join(',')}`, actor, { permissions: [...permissions] });
}

/** A queued job (no worker runs here) and a webhook endpoint, fresh for each call that may use them up. */
async function fixture(): Promise<Fixture> {
  const owner = { accountId, keyId: null, userId: 'test' } as const;
  const job = await t.services.jobs.create(owner, ['a fixture']);
  const hook = await t.services.webhooks.create(accountId, { url: 'http://127.0.0.1:9/fixture' }, t.baseUrl);
  const fixtureDocument = `query Fixture${randomUUID().replaceAll('-', '')} { me { id } }`;
  const manifest = { format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: sha256Hex(fixtureDocument), name: 'Fixture', type: 'query', body: fixtureDocument }] };
  await t.services.trustedDocuments.register(accountId, manifest, () => ({ ok: true, type: 'query', name: 'Fixture' }));
  return { jobId: job.jobId, webhookId: hook.id, documentId: sha256Hex(fixtureDocument) };
}

const balance = async () => (await t.services.credits.balances([accountId]))[0]!;

interface Outcome {
  /** 403 key_permission (REST), or FORBIDDEN with reason key_permission and no data (GraphQL). */
  refused: boolean;
  ok: boolean;
  detail: unknown;
}

async function callRest(route: string, key: string, c: Case, f: Fixture): Promise<Outcome> {
  const [method, pattern] = route.split(' ') as [string, string];
  const path = pattern.replace(':jobId', f.jobId).replace(':id', pattern.includes('/documents/') ? f.documentId : f.webhookId);
  const body = method === 'GET' || method === 'DELETE' ? undefined : JSON.stringify(c.body ?? {});
  const res = await fetch(`${t.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as { code?: string; error?: string }) : {};
  return {
    refused: res.status === 403 && json.code === 'key_permission' && json.error === 'This API key does not have permission for this operation',
    ok: res.status >= 200 && res.status < 300,
    detail: { status: res.status, json },
  };
}

async function callGraphQL(spec: OperationSpec, key: string, c: Case, f: Fixture): Promise<Outcome> {
  const query = c.graphql!(f);
  const field = spec.graphql!.field;
  if (spec.graphql!.type === 'Subscription') return subscribe(key, query, field);
  const res = await fetch(`${t.baseUrl}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const json = (await res.json()) as { data?: Record<string, unknown> | null; errors?: { message: string; extensions?: Record<string, unknown> }[] };
  return {
    refused:
      res.status === 403 &&
      json.data === undefined &&
      json.errors?.[0]?.message === 'This API key does not have permission for this operation' &&
      json.errors[0].extensions?.code === 'FORBIDDEN' &&
      json.errors[0].extensions?.reason === 'key_permission',
    ok: res.status === 200 && !json.errors && Boolean(json.data?.[field]),
    detail: { status: res.status, json },
  };
}

async function subscribe(key: string, query: string, field: string): Promise<Outcome> {
  const client = createClient({ url: `${t.baseUrl.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${key}` }, retryAttempts: 0 });
  sockets.push(client);
  const first = await new Promise<{ data?: Record<string, unknown>; errors?: readonly { extensions?: Record<string, unknown> }[] }>((resolve) => {
    const stop = client.subscribe(
      { query },
      {
        next: (value) => {
          resolve(value as never);
          stop();
        },
        error: (errors) => resolve({ errors: Array.isArray(errors) ? errors : [errors as never] }),
        complete: () => resolve({}),
      },
    );
  });
  return {
    refused: first.errors?.[0]?.extensions?.code === 'FORBIDDEN' && first.errors[0].extensions?.reason === 'key_permission',
    ok: !first.errors && Boolean(first.data?.[field]),
    detail: first,
  };
}

/** Every door of the catalog's rows: each REST route, and the GraphQL field. */
const doors = OPERATION_NAMES.flatMap((name) => {
  const spec: OperationSpec = OPERATIONS[name];
  return [...spec.rest.map((route) => ({ name, door: `REST ${route}` })), ...(spec.graphql ? [{ name, door: `GraphQL ${spec.graphql.type}.${spec.graphql.field}` }] : [])];
});

function call(name: OperationName, door: string, key: string, f: Fixture): Promise<Outcome> {
  const spec: OperationSpec = OPERATIONS[name];
  return door.startsWith('REST ') ? callRest(door.slice(5), key, CASES[name], f) : callGraphQL(spec, key, CASES[name], f);
}

describe('the permission matrix, from the operation catalog', () => {
  it('has a case for every operation and door (a GraphQL field needs its document)', () => {
    expect(Object.keys(CASES).sort()).toEqual([...OPERATION_NAMES].sort());
    for (const name of OPERATION_NAMES) if (OPERATIONS[name].graphql) expect(CASES[name].graphql, name).toBeTypeOf('function');
    expect(doors.length).toBeGreaterThanOrEqual(OPERATION_NAMES.length);
  });

  it.each(doors)('$name via $door: refused (403 key_permission) and nothing charged without its permission', async ({ name, door }) => {
    const needed = OPERATIONS[name].permission;
    const { key } = await keyWith(KEY_PERMISSIONS.filter((p) => p !== needed));
    const f = await fixture();
    const before = await balance();
    const outcome = await call(name, door, key, f);
    expect(outcome.refused, JSON.stringify(outcome.detail)).toBe(true);
    expect(await balance()).toBe(before);
  });

  it.each(doors)('$name via $door: runs with only its permission, and charges what the catalog says', async ({ name, door }) => {
    const { key } = await keyWith([OPERATIONS[name].permission, ...(CASES[name].alsoNeeds ?? [])]);
    const f = await fixture();
    const before = await balance();
    const outcome = await call(name, door, key, f);
    expect(outcome.ok, JSON.stringify(outcome.detail)).toBe(true);
    const charged = OPERATIONS[name].charges ? costOf(name, CASES[name].units ?? 1) : 0;
    expect(before - (await balance())).toBe(charged - (CASES[name].refunds ?? 0));
  });
});

describe('a GraphQL operation is admitted whole or not at all', () => {
  it('one field outside the permissions refuses the operation before any field runs (no lookup charged)', async () => {
    const { key } = await keyWith(['lookup']);
    const before = await balance();
    const res = await fetch(`${t.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { lookup(keyword: "oak") { credits } generate(prompts: ["x"]) { jobId } }' }),
    });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ errors: [{ extensions: { code: 'FORBIDDEN', reason: 'key_permission' } }] });
    expect(await balance()).toBe(before);
  });
});

describe('client tokens and their key’s permissions', () => {
  async function mintRest(key: string, body: Record<string, unknown>) {
    const res = await fetch(`${t.baseUrl}/api/client-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  it('a token gets only scopes its key has: asking for more is 400 (REST and GraphQL); the default is the key’s own', async () => {
    const { key } = await keyWith(['client_tokens', 'read']);
    const more = await mintRest(key, { origins: [APP], scopes: ['read', 'lookup'] });
    expect(more.status).toBe(400);
    expect(more.body).toMatchObject({ code: 'invalid_request', error: expect.stringMatching(/^scopes .*only read \(not lookup\)/) });
    const gql = await fetch(`${t.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `mutation { createClientToken(origins: ["${APP}"], scopes: [generate]) { token } }` }),
    });
    expect(((await gql.json()) as any).errors[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', reason: 'invalid_request' } });
    const byDefault = await mintRest(key, { origins: [APP] });
    expect(byDefault).toMatchObject({ status: 201, body: { scopes: ['read'] } });
  });

  it('a token loses what its key loses, on another instance, through the change feed', async () => {
    const other = await startTestApp({ deps: { definitionProvider: new ScriptedProvider() } });
    try {
      const { id, key } = await keyWith(['client_tokens', 'lookup', 'read']);
      const { body } = await mintRest(key, { origins: [APP] });
      expect(body.scopes).toEqual(['lookup', 'read']);
      const lookup = () =>
        fetch(`${other.baseUrl}/graphql`, {
          method: 'POST',
          headers: { authorization: `Bearer ${body.token}`, 'content-type': 'application/json', origin: APP },
          body: JSON.stringify({ query: 'mutation { lookup(keyword: "oak") { credits } }' }),
        });
      expect((await lookup()).status).toBe(200);
      await t.services.keys.update(id, { permissions: ['client_tokens', 'read'] }, actor);
      const before = await balance();
      await until(async () => (await lookup()).status === 403, 'the token to lose lookup with its key');
      const refused = (await (await lookup()).json()) as any;
      expect(refused.errors[0].extensions).toMatchObject({ code: 'FORBIDDEN', reason: 'key_permission' });
      expect(await balance()).toBe(before);
    } finally {
      await other.close();
    }
  });
});
