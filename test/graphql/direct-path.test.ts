import { ApolloServer } from '@apollo/server';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from '../gateway/fakes.js';

/**
 * The direct path of `/graphql` (src/http/graphql/direct-path.ts) answers exactly as Apollo Server
 * does. Two gateways on one database, one with the direct path and one with every request through
 * Apollo, get the same requests from two accounts in the same state; status, the headers a client
 * reads, the body (ids aside) and the credits charged must match. Each case also checks which path
 * answered: the plain operations the direct one, everything else Apollo.
 */
const APOLLO_CLIENT_ACCEPT = 'application/graphql-response+json,application/json;q=0.9';
const actor = { actor: 'test', ip: null, host: 'test' };
const LOOKUP = 'mutation L($w: String!) { lookup(keyword: $w) { keyword definition credits } }';

interface Side {
  app: TestApp;
  provider: ScriptedProvider;
  logs: string[];
  /** A key of an account with 100 credits, one with none, one that may only read, one limited to 2 units a minute. */
  keys: { rich: string; poor: string; readOnly: string; limited: string };
  accountId: string;
}

let direct: Side;
let viaApollo: Side;
const apolloCalls = vi.spyOn(ApolloServer.prototype, 'executeHTTPGraphQLRequest');

async function side(apolloOnly: boolean): Promise<Side> {
  const provider = new ScriptedProvider();
  const logs: string[] = [];
  const app = await startTestApp({
    graphqlApolloOnly: apolloOnly,
    RATE_LIMIT_PER_MINUTE: '1000',
    LOG_LEVEL: 'error',
    logStream: { write: (line) => void logs.push(line) },
    deps: { definitionProvider: provider },
  });
  const rich = await app.createAccountWithKey({ credits: 100 });
  const poor = await app.createAccountWithKey({ credits: 0 });
  const readOnly = await app.services.keys.create(rich.accountId, 'read only', actor, { permissions: ['read'] });
  const limited = await app.services.keys.create(rich.accountId, 'limited', actor, { rateLimitPerMinute: 2 });
  return { app, provider, logs, keys: { rich: rich.key, poor: poor.key, readOnly: readOnly.key, limited: limited.key }, accountId: rich.accountId };
}

beforeAll(async () => {
  direct = await side(false);
  viaApollo = await side(true);
});
afterAll(async () => {
  apolloCalls.mockRestore();
  await Promise.all([direct?.app.close(), viaApollo?.app.close()]);
});
afterEach(() => {
  for (const s of [direct, viaApollo]) s.provider.mode = 'ok';
});

interface Sent {
  key?: keyof Side['keys'];
  body: unknown;
  contentType?: string;
  accept?: string | null;
}

/** What a client sees of an answer, ids and request-dependent values replaced. */
interface Seen {
  status: number;
  headers: Record<string, string | null>;
  /** Every header's name but the date's and the request id's. */
  headerNames: string[];
  body: unknown;
  /** Requests Apollo handled for this one. */
  apollo: number;
}

const COMPARED_HEADERS = ['content-type', 'ratelimit', 'ratelimit-policy', 'retry-after', 'allow'];

async function send(s: Side, sent: Sent): Promise<Seen> {
  const headers: Record<string, string> = { authorization: `Bearer ${s.keys[sent.key ?? 'rich']}` };
  if (sent.contentType !== '') headers['content-type'] = sent.contentType ?? 'application/json';
  if (sent.accept !== null) headers.accept = sent.accept ?? APOLLO_CLIENT_ACCEPT;
  const before = apolloCalls.mock.calls.length;
  const res = await fetch(`${s.app.baseUrl}/graphql`, { method: 'POST', headers, body: typeof sent.body === 'string' ? sent.body : JSON.stringify(sent.body) });
  const text = await res.text();
  return {
    status: res.status,
    headers: Object.fromEntries(COMPARED_HEADERS.map((h) => [h, res.headers.get(h)?.replace(/t=\d+/, 't=N') ?? null])),
    headerNames: headerNamesOf(res.headers),
    body: text.endsWith('\n') ? { json: JSON.parse(text) as unknown, newline: true } : text,
    apollo: apolloCalls.mock.calls.length - before,
  };
}

function headerNamesOf(headers: Headers): string[] {
  const names: string[] = [];
  headers.forEach((_, name) => {
    if (name !== 'date' && name !== 'x-request-id') names.push(name);
  });
  return names.sort();
}

/** Sends to both gateways; returns what each answered, with the direct side's Apollo count. */
async function both(sent: Sent): Promise<{ direct: Seen; apollo: Seen }> {
  const d = await send(direct, sent);
  const a = await send(viaApollo, sent);
  return { direct: d, apollo: a };
}

/** The case answers alike on both; `path`: which one answered on the direct side. */
async function same(sent: Sent, path: 'direct' | 'apollo'): Promise<Seen> {
  const { direct: d, apollo: a } = await both(sent);
  expect(a.apollo).toBe(1);
  expect({ ...d, apollo: undefined }).toEqual({ ...a, apollo: undefined });
  expect(d.apollo).toBe(path === 'direct' ? 0 : 1);
  return d;
}

async function credits(s: Side): Promise<number> {
  return (await s.app.services.credits.balances([s.accountId]))[0]!;
}

describe('the direct path of /graphql answers as Apollo Server', () => {
  it('a lookup, charged the same on both, with Apollo Client 4’s Accept, with none, and with each JSON media type', async () => {
    const before = [await credits(direct), await credits(viaApollo)];
    const seen = await same({ body: { query: LOOKUP, variables: { w: 'oak' }, operationName: 'L' } }, 'direct');
    expect(seen.status).toBe(200);
    expect(seen.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    expect(seen.headerNames).toEqual(expect.arrayContaining(['content-length', 'content-type', 'vary']));
    expect(seen.body).toEqual({ json: { data: { lookup: { keyword: 'oak', definition: 'definition of oak', credits: before[0]! - 1 } } }, newline: true });
    expect((await same({ body: { query: LOOKUP, variables: { w: 'elm' } }, accept: null }, 'direct')).headers['content-type']).toBe('application/json; charset=utf-8');
    expect((await same({ body: { query: LOOKUP, variables: { w: 'ash' }, operationName: null }, accept: '*/*' }, 'direct')).headers['content-type']).toBe('application/json; charset=utf-8');
    await same({ body: { query: LOOKUP, variables: { w: 'yew' } }, accept: 'application/json', contentType: 'application/json; charset=utf-8' }, 'direct');
    expect([await credits(direct), await credits(viaApollo)]).toEqual([before[0]! - 4, before[1]! - 4]);
  });

  it('queries, a named operation of several, and the same document again (kept)', async () => {
    const doc = 'query A { me { credits } } query B { jobs(first: 1) { nodes { id } pageInfo { hasNextPage } } }';
    await same({ body: { query: doc, operationName: 'A' } }, 'direct');
    await same({ body: { query: doc, operationName: 'B' } }, 'direct');
    await same({ body: { query: doc, operationName: 'A' } }, 'direct');
    await same({ body: { query: '{ __typename }', variables: null } }, 'direct');
  });

  it('field errors: insufficient credits (200, nothing charged), a provider outage, and a fault of ours masked and logged on both', async () => {
    // Words not looked up before: a definition once found is served from the cache without the provider.
    const poor = await same({ key: 'poor', body: { query: LOOKUP, variables: { w: 'birch' } } }, 'direct');
    expect(poor.status).toBe(200);
    expect(JSON.stringify(poor.body)).toContain('INSUFFICIENT_CREDITS');
    for (const s of [direct, viaApollo]) s.provider.mode = 'unavailable';
    expect(JSON.stringify((await same({ body: { query: LOOKUP, variables: { w: 'maple' } } }, 'direct')).body)).toContain('SERVICE_UNAVAILABLE');
    // A fault of ours (not an AppError): masked on both, and logged with what it was.
    const faults = [direct, viaApollo].map((s) => vi.spyOn(s.app.services.balances, 'balances').mockRejectedValueOnce(new TypeError('balance bug')));
    const logged = [direct.logs.length, viaApollo.logs.length];
    const fault = await same({ body: { query: '{ me { credits } }' } }, 'direct');
    for (const f of faults) f.mockRestore();
    expect(JSON.stringify(fault.body)).toContain('INTERNAL_SERVER_ERROR');
    const masked = (s: Side, from: number) => s.logs.slice(from).filter((l) => l.includes('graphql: masked internal error') && l.includes('balance bug'));
    expect(masked(direct, logged[0]!)).toHaveLength(1);
    expect(masked(viaApollo, logged[1]!)).toHaveLength(1);
  });

  it('bad variables: 400 BAD_USER_INPUT from the direct path too, running nothing', async () => {
    const before = [await credits(direct), await credits(viaApollo)];
    const wrongType = await same({ body: { query: LOOKUP, variables: { w: 42 } } }, 'direct');
    expect(wrongType.status).toBe(400);
    expect(JSON.stringify(wrongType.body)).toContain('BAD_USER_INPUT');
    expect((await same({ body: { query: LOOKUP } }, 'direct')).status).toBe(400);
    expect((await same({ body: { query: LOOKUP, variables: {} } }, 'direct')).status).toBe(400);
    expect([await credits(direct), await credits(viaApollo)]).toEqual(before);
  });

  it('refusals before execution: a missing key permission (403) and a rate limit spent by an operation’s fields (429 with its headers)', async () => {
    const forbidden = await same({ key: 'readOnly', body: { query: LOOKUP, variables: { w: 'oak' } } }, 'direct');
    expect(forbidden.status).toBe(403);
    expect(JSON.stringify(forbidden.body)).toContain('key_permission');
    const three = 'mutation { a: lookup(keyword: "a") { credits } b: lookup(keyword: "b") { credits } c: lookup(keyword: "c") { credits } }';
    const limited = await same({ key: 'limited', body: { query: three } }, 'direct');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).not.toBeNull();
    expect(limited.headers['ratelimit-policy']).toBe('"default";q=2;w=60');
  });

  it('everything else is Apollo’s on both: syntax and validation errors, an unknown operation, subscriptions, other media types, extensions, bad fields', async () => {
    const cases: Sent[] = [
      { body: { query: '{ me { credits }' } },
      { body: { query: '{ me { nope } }' } },
      { body: { query: 'query A { me { credits } }', operationName: 'B' } },
      { body: { query: 'query A { me { credits } } query B { me { id } }' } },
      { body: { query: 'subscription { jobStatus(id: "x") { status } }' } },
      { body: { query: '{ me { credits } }' }, accept: 'text/html' },
      { body: { query: '{ me { credits } }' }, contentType: 'application/json;charset=UTF-8' },
      { body: { query: '{ me { credits } }', extensions: { persistedQuery: { version: 1, sha256Hash: 'x' } } } },
      { body: { query: '{ me { credits } }', variables: '{}' } },
      { body: { query: '{ me { credits } }', operationName: 7 } },
      { body: { query: '' } },
      { body: { variables: {} } },
      { body: [{ query: '{ me { credits } }' }] },
    ];
    for (const sent of cases) {
      const seen = await same(sent, 'apollo');
      expect(seen.status, JSON.stringify(sent)).toBeGreaterThanOrEqual(200);
    }
    // The text that failed once still fails: it is kept as Apollo's.
    expect((await same({ body: { query: '{ me { nope } }' } }, 'apollo')).status).toBe(400);
  });
});
