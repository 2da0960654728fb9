import { randomUUID } from 'node:crypto';
import {
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isSpecifiedScalarType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../src/config.js';
import { AppError, ERROR_CATALOG, type ErrorCode } from '../../src/domain/errors.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';

/**
 * What front-end tools rely on in the served schema (read by introspection over HTTP, as codegen and
 * GraphiQL read it): a description on everything, with the limits; `Job.id` for client caches;
 * `generate { job }`; `extensions.reason` on every error; and no INTERNAL_SERVER_ERROR for anything a
 * client sends, checked for every argument of every operation from the schema itself.
 */

let t: TestApp;
let acct: TestAccount;
let schema: GraphQLSchema;
const clients: Client[] = [];

beforeAll(async () => {
  t = await startTestApp();
  acct = await t.createAccountWithKey({ credits: 100_000 });
  const intro = await gql(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true }));
  expect(intro.status).toBe(200);
  schema = buildClientSchema(intro.body.data);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose()));
  await t?.close();
});

interface Answer {
  status: number;
  body: any;
}

async function post(body: unknown, key = acct.key): Promise<Answer> {
  const res = await fetch(`${t.baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) };
}

const gql = (query: string, variables?: Record<string, unknown>, key?: string) => post({ query, variables }, key);

function wsClient(): Client {
  const client = createClient({
    url: `${t.baseUrl.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: true,
    connectionParams: { Authorization: `Bearer ${acct.key}` },
  });
  clients.push(client);
  return client;
}

/** Every message of one operation over WebSocket, until it completes or fails. */
function overWs(client: Client, payload: { query: string; variables?: Record<string, unknown> }): Promise<{ results: any[]; errors: any[] }> {
  return new Promise((resolve) => {
    const results: any[] = [];
    client.subscribe(payload, {
      next: (r) => results.push(r),
      error: (e) => resolve({ results, errors: Array.isArray(e) ? e : [e] }),
      complete: () => resolve({ results, errors: [] }),
    });
  });
}

const CONTRACT_CODES = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'INSUFFICIENT_CREDITS', 'BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'BAD_GATEWAY']);

/** A client's mistake: a contract code, a reason naming the catalog row of that code, never a fault. */
function expectClientErrors(errors: any[], what: string): void {
  for (const e of errors) {
    expect(e, what).toMatchObject({ message: expect.any(String), extensions: { code: expect.any(String), reason: expect.any(String) } });
    expect(CONTRACT_CODES.has(e.extensions.code), `${what}: ${JSON.stringify(e)}`).toBe(true);
    const row = ERROR_CATALOG[e.extensions.reason as ErrorCode];
    expect(row?.graphqlCode, `${what}: reason ${e.extensions.reason} is a catalog row of ${e.extensions.code}`).toBe(e.extensions.code);
  }
}

describe('descriptions', () => {
  it('every type, field, argument, enum value and scalar of the schema has one', () => {
    const missing: string[] = [];
    const need = (what: string, description: string | null | undefined) => {
      if (!description?.trim()) missing.push(what);
    };
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith('__')) continue;
      need(`type ${type.name}`, type.description);
      if (isObjectType(type) || isInterfaceType(type) || isInputObjectType(type)) {
        for (const field of Object.values(type.getFields())) {
          need(`${type.name}.${field.name}`, field.description);
          for (const arg of 'args' in field ? field.args : []) need(`${type.name}.${field.name}(${arg.name})`, arg.description);
        }
      }
      if (isEnumType(type)) for (const value of type.getValues()) need(`${type.name}.${value.name}`, value.description);
      if (isScalarType(type) && !isSpecifiedScalarType(type)) expect(type.specifiedByURL, `${type.name} @specifiedBy`).toMatch(/^https:\/\//);
    }
    expect(missing).toEqual([]);
  });

  it('states the default limits the gateway enforces, and says they are defaults', () => {
    const defaults = loadConfig({});
    const n = (v: number) => v.toLocaleString('en-US');
    const mutation = schema.getMutationType()!.getFields();
    const prompts = mutation.generate!.args.find((a) => a.name === 'prompts')!.description!;
    expect(prompts).toContain(`1 to ${n(defaults.MAX_PROMPTS)} prompts`);
    expect(prompts).toContain(`at most ${n(defaults.MAX_PROMPT_LENGTH)} characters`);
    expect(prompts).toMatch(/default/);
    const keyword = mutation.lookup!.args.find((a) => a.name === 'keyword')!.description!;
    expect(keyword).toContain(`at most ${n(defaults.MAX_KEYWORD_LENGTH)} characters`);
    expect(keyword).toMatch(/default/);
    const first = schema.getQueryType()!.getFields().jobs!.args.find((a) => a.name === 'first')!;
    expect(first.description).toContain('1 to 100');
    expect(first.defaultValue).toBe(20);
    expect(first.description).toMatch(/null: 20/);
  });

  it('DateTimeISO tells codegen what it is: a UTC ISO 8601 string, with @specifiedBy', () => {
    const scalar = schema.getType('DateTimeISO');
    expect(isScalarType(scalar)).toBe(true);
    expect(scalar!.description).toMatch(/ISO 8601.*UTC/);
    expect(scalar!.description).toContain("DateTimeISO: 'string'");
    expect(isScalarType(scalar) && scalar.specifiedByURL).toBe('https://scalars.graphql.org/andimarek/date-time');
  });

  it('no argument is non-null with a default (a null variable there fails inside execution)', () => {
    for (const [, field] of rootFields()) {
      for (const arg of field.args) expect(isNonNullType(arg.type) && arg.defaultValue !== undefined, `${field.name}(${arg.name})`).toBe(false);
    }
  });
});

describe('client caches', () => {
  it('only Job, Account and ApiKey carry an id, an ID! (JobImage is stored inside its Job)', () => {
    const withId = Object.values(schema.getTypeMap()).filter(
      (type) => isObjectType(type) && !type.name.startsWith('__') && ('id' in type.getFields() || '_id' in type.getFields()),
    );
    expect(withId.map((type) => type.name).sort()).toEqual(['Account', 'ApiKey', 'Job']);
    for (const type of withId) expect(String(isObjectType(type) && type.getFields().id!.type)).toBe('ID!');
  });

  it('generate returns the created job; Job.id is its id in job, jobs and jobStatus', async () => {
    const jobFields = 'id jobId status totalImages creditsUsed creditsRefunded createdAt images { index prompt status url error }';
    const started = await gql(`mutation { generate(prompts: [" a red fox ", "a blue owl"]) { jobId totalImages creditsUsed credits job { ${jobFields} } } }`);
    expect(started.body.errors).toBeUndefined();
    const result = started.body.data.generate;
    expect(result.job).toMatchObject({ id: result.jobId, jobId: result.jobId, totalImages: 2, creditsUsed: 2, creditsRefunded: 0 });
    expect(result.job.images.map((i: any) => [i.index, i.prompt])).toEqual([
      [0, 'a red fox'],
      [1, 'a blue owl'],
    ]);
    expect(result.job.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const read = await gql(`query($id: ID!) { job(id: $id) { ${jobFields} } jobs(first: 5) { nodes { id jobId } } }`, { id: result.jobId });
    expect(read.body.data.job).toMatchObject({ id: result.jobId, jobId: result.jobId, createdAt: result.job.createdAt });
    expect(read.body.data.jobs.nodes).toContainEqual({ id: result.jobId, jobId: result.jobId });

    // The job stays queued (no worker here): its first push is enough.
    const pushed = await new Promise((resolve, reject) => {
      const stop = wsClient().subscribe(
        { query: 'subscription($id: ID!) { jobStatus(jobId: $id) { id jobId } }', variables: { id: result.jobId } },
        { next: (r) => (stop(), resolve(r)), error: reject, complete: () => reject(new Error('completed before any push')) },
      );
    });
    expect(pushed).toEqual({ data: { jobStatus: { id: result.jobId, jobId: result.jobId } } });
  });

  it('a replayed generate returns the same job, charged once', async () => {
    const key = randomUUID();
    const ask = () => gql('mutation($k: String) { generate(prompts: ["an owl"], idempotencyKey: $k) { jobId credits job { id status } } }', { k: key });
    const first = await ask();
    const again = await ask();
    expect(first.body.errors).toBeUndefined();
    expect(again.body.data.generate).toMatchObject({ jobId: first.body.data.generate.jobId, credits: first.body.data.generate.credits });
    expect(again.body.data.generate.job.id).toBe(first.body.data.generate.jobId);
  });
});

describe('extensions.reason', () => {
  it('is the catalog code of every AppError a resolver raises, next to its code', async () => {
    const spy = vi.spyOn(t.services.definitions, 'lookup');
    try {
      for (const [code, row] of Object.entries(ERROR_CATALOG) as [ErrorCode, (typeof ERROR_CATALOG)[ErrorCode]][]) {
        spy.mockRejectedValueOnce(new AppError(code));
        const res = await gql('mutation { lookup(keyword: "cat") { credits } }');
        expect(res.body.errors, code).toEqual([expect.objectContaining({ message: row.message, extensions: expect.objectContaining({ code: row.graphqlCode, reason: code }) })]);
      }
    } finally {
      spy.mockRestore();
    }
  });

  it('is the REST code of the same condition, caused for real', async () => {
    const poor = await t.createAccountWithKey({ credits: 0 });
    const idem = randomUUID();
    await gql('mutation($k: String) { lookup(keyword: "cat", idempotencyKey: $k) { credits } }', { k: idem });
    const cases: [string, () => Promise<Answer>][] = [
      ['insufficient_credits', () => gql('mutation { lookup(keyword: "cat") { credits } }', undefined, poor.key)],
      ['idempotency_key_reused', () => gql('mutation($k: String) { lookup(keyword: "dog", idempotencyKey: $k) { credits } }', { k: idem })],
      ['invalid_request', () => gql('mutation { lookup(keyword: "  ") { credits } }')],
      ['job_not_found', () => gql(`{ job(id: "${randomUUID()}") { id } }`)],
      ['invalid_api_key', () => gql('{ me { id } }', undefined, `wi_live_${'0'.repeat(64)}`)],
      ['invalid_api_key_format', () => gql('{ me { id } }', undefined, 'wi_live_nope')],
      ['invalid_graphql', () => gql('{ me { id }')],
      ['invalid_json', () => post('{"query": ')],
    ];
    for (const [reason, ask] of cases) {
      const res = await ask();
      expect(res.body.errors?.[0]?.extensions?.reason, `${reason}: ${JSON.stringify(res.body)}`).toBe(reason);
      expectClientErrors(res.body.errors, reason);
    }
  });
});

describe('jobs(first)', () => {
  it('null or omitted is a page of 20; out of range is BAD_USER_INPUT naming first and its limit', async () => {
    const busy = await t.createAccountWithKey({ credits: 100 });
    for (let i = 0; i < 21; i++) expect((await gql('mutation { generate(prompts: ["x"]) { jobId } }', undefined, busy.key)).body.errors).toBeUndefined();
    const page = (args: string, variables?: Record<string, unknown>) =>
      gql(`query${args.includes('$f') ? '($f: Int)' : ''} { jobs${args} { nodes { id } pageInfo { hasNextPage } } }`, variables, busy.key);
    for (const [args, variables] of [['(first: null)'], [''], ['(first: $f)', { f: null }], ['(first: $f)', {}]] as const) {
      const res = await page(args, variables);
      expect(res.body.errors, args).toBeUndefined();
      expect(res.body.data.jobs.nodes, args).toHaveLength(20);
      expect(res.body.data.jobs.pageInfo.hasNextPage, args).toBe(true);
    }
    for (const f of [0, -1, 101]) {
      const res = await page('(first: $f)', { f });
      expect(res.body.errors, String(f)).toEqual([
        expect.objectContaining({ message: 'first must be an integer between 1 and 100', extensions: { code: 'BAD_USER_INPUT', reason: 'invalid_request', field: 'first' } }),
      ]);
    }
    const huge = await page('(first: $f)', { f: 2 ** 31 });
    expect(huge.status).toBe(400);
    expect(huge.body.errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT', reason: 'invalid_graphql' });
  });
});

describe('nothing a client sends is INTERNAL_SERVER_ERROR', () => {
  it('nulls and edge values for every argument of every operation, inline and as variables, over HTTP and WebSocket', async () => {
    const ws = wsClient();
    let sent = 0;
    for (const [root, field] of rootFields()) {
      for (const arg of field.args) {
        for (const value of edgeValues(arg.type)) {
          for (const form of ['variable', 'looseVariable', 'inline'] as const) {
            const document = operation(root, field, arg, value, form);
            if (!document) continue;
            const what = `${root} ${field.name}(${arg.name}: ${JSON.stringify(value)?.slice(0, 60)}) as ${form}`;
            if (root !== 'subscription') {
              const http = await post(document);
              expect(http.status, what).not.toBe(500);
              expect([200, 400], `${what}: ${JSON.stringify(http.body)}`).toContain(http.status);
              expectClientErrors(http.body.errors ?? [], `HTTP ${what}`);
            }
            const overSocket = await overWs(ws, document);
            for (const result of overSocket.results) expectClientErrors(result.errors ?? [], `WS ${what}`);
            expectClientErrors(overSocket.errors, `WS ${what}`);
            sent++;
          }
        }
      }
    }
    // Every argument of the schema was tried, with each kind of value.
    expect(sent).toBeGreaterThan(200);
  });

  it('documents that are empty, broken or not GraphQL at all', async () => {
    const bodies: unknown[] = [
      {},
      { query: '' },
      { query: '   ' },
      { query: '# only a comment' },
      { query: '{' },
      { query: '{}' },
      { query: 'query' },
      { query: '{ me }' },
      { query: '{ nope }' },
      { query: null },
      { query: 1 },
      { query: ['{ me { id } }'] },
      { query: '{ me { id } }', variables: 'x' },
      { query: '{ me { id } }', variables: [] },
      { query: '{ me { id } }', operationName: 'Nope' },
      { query: 'query A { me { id } } query B { me { id } }' },
      { query: 'query($x: Nope) { me { id } }', variables: { x: 1 } },
      { query: 'query($x: Int) { me { id } }', variables: { x: 'one' } },
      { query: 'fragment F on Job { id } { me { id } }' },
      { query: 'subscription { jobStatus(jobId: "x") { id } }' },
      { query: '{ me { id } }', extensions: 1 },
      { query: 'mutation($p: [String!]!) { generate(prompts: $p) { jobId } }', variables: { p: [[['x']]] } },
      [{ query: '{ me { id } }' }],
      null,
      'just a string',
    ];
    for (const body of bodies) {
      const res = await post(JSON.stringify(body));
      expect(res.status, JSON.stringify(body)).toBe(400);
      expectClientErrors(res.body.errors, JSON.stringify(body));
      expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
    const q = encodeURIComponent('{ me { id } }');
    for (const search of ['', '?query=', `?query=${q}&variables=notjson`, `?query=${q}&variables=%5B%5D`, '?query=a&query=b', `?query=${q}&extensions=zz`, '?query[a]=1']) {
      const res = await fetch(`${t.baseUrl}/graphql${search}`, { headers: { authorization: `Bearer ${acct.key}`, 'apollo-require-preflight': '1' } });
      expect(res.status, search).toBe(400);
      expectClientErrors(((await res.json()) as any).errors, `GET ${search}`);
    }
    const ws = wsClient();
    for (const query of ['', '   ', '{', '{ me }', '{ nope }', 'query A { me { id } } query B { me { id } }', 'query($x: Int!) { jobs(first: $x) { nodes { id } } }']) {
      const res = await overWs(ws, { query });
      const errors = [...res.errors, ...res.results.flatMap((r) => r.errors ?? [])];
      expect(errors.length, JSON.stringify(query)).toBeGreaterThan(0);
      expectClientErrors(errors, `WS ${JSON.stringify(query)}`);
    }
  });
});

type Root = 'query' | 'mutation' | 'subscription';

function rootFields(): [Root, GraphQLField<unknown, unknown>][] {
  const roots: [Root, ReturnType<GraphQLSchema['getQueryType']>][] = [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
    ['subscription', schema.getSubscriptionType()],
  ];
  return roots.flatMap(([root, type]) => (type ? Object.values(type.getFields()).map((f) => [root, f] as [Root, GraphQLField<unknown, unknown>]) : []));
}

const NO_VALUE = Symbol('omitted');

/** Values a client may send for an argument of this type: nulls, empties, limits and wrong types. */
function edgeValues(type: GraphQLInputType): unknown[] {
  const inner = isNonNullType(type) ? type.ofType : type;
  const common = [null, NO_VALUE, {}, true];
  if (isListType(inner)) {
    const item = edgeValues(inner.ofType).filter((v) => v !== NO_VALUE);
    return [...common, [], [null], item.slice(0, 8), ...item.map((v) => [v]), Array.from({ length: 51 }, () => valid(inner.ofType)), 'single'];
  }
  const named = getNamedType(inner);
  switch (named.name) {
    case 'Int':
      return [...common, 0, -1, 1, 20, 100, 101, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 1e300, 1.5, '1', ''];
    case 'String':
    case 'ID':
      return [...common, '', ' ', '\u0000', 'null', '🦊'.repeat(3), 'x'.repeat(2001), 'zzz', randomUUID(), randomUUID().toUpperCase(), 0, -1, 1.5, [''], ['a', 'b']];
    default:
      return [...common, 'x', 1];
  }
}

/** A value that passes the argument's type (so that only the argument under test is odd). */
function valid(type: GraphQLInputType): unknown {
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) return [valid(inner.ofType)];
  return getNamedType(inner).name === 'Int' ? 1 : `edge-${randomUUID()}`;
}

/**
 * One operation of the field with `value` for `arg`: as a variable of the argument's own type, as a
 * variable of its nullable type (non-null arguments: a null there reaches validation), or inline in the
 * document. Other required arguments get valid values. The selection is `__typename`, valid anywhere.
 */
function operation(root: Root, field: GraphQLField<unknown, unknown>, arg: GraphQLArgument, value: unknown, form: 'variable' | 'looseVariable' | 'inline') {
  const others = field.args.filter((a) => a !== arg && isNonNullType(a.type)).map((a) => `${a.name}: ${literal(valid(a.type))}`);
  const selection = isObjectType(getNamedType(field.type)) ? ' { __typename }' : '';
  if (form === 'inline') {
    if (value === NO_VALUE) return { query: `${root} { ${field.name}${args(others)}${selection} }` };
    const text = literal(value);
    return text === undefined ? undefined : { query: `${root} { ${field.name}${args([...others, `${arg.name}: ${text}`])}${selection} }` };
  }
  if (form === 'looseVariable' && !isNonNullType(arg.type)) return undefined;
  const declared = String(form === 'looseVariable' && isNonNullType(arg.type) ? arg.type.ofType : arg.type);
  const query = `${root}($v: ${declared}) { ${field.name}${args([...others, `${arg.name}: $v`])}${selection} }`;
  return { query, variables: value === NO_VALUE ? {} : { v: value } };
}

const args = (list: string[]) => (list.length ? `(${list.join(', ')})` : '');

/** A GraphQL literal for a JSON value (objects as input objects); undefined when it has none. */
function literal(value: unknown): string | undefined {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) && Math.abs(value) < 1e21 ? String(value) : undefined;
  if (Array.isArray(value)) {
    const items = value.map(literal);
    return items.includes(undefined) ? undefined : `[${items.join(', ')}]`;
  }
  if (typeof value === 'object') return '{}';
  return undefined;
}
