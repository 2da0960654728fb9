import { ApolloServer } from '@apollo/server';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from '../gateway/fakes.js';

/**
 * What `/graphql` over HTTP answers (Apollo Server's own pipeline, with the product's plugins): status,
 * the headers a client reads, the body and the credits charged, for plain operations, field errors,
 * bad variables, refusals before execution and the requests Apollo itself refuses. Every request goes
 * through Apollo's `executeHTTPGraphQLRequest` (counted), none around it.
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

let gw: Side;
const apolloCalls = vi.spyOn(ApolloServer.prototype, 'executeHTTPGraphQLRequest');

async function side(): Promise<Side> {
  const provider = new ScriptedProvider();
  const logs: string[] = [];
  const app = await startTestApp({

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
  gw = await side();
});
afterAll(async () => {
  apolloCalls.mockRestore();
  await gw?.app.close();
});
afterEach(() => {
  gw.provider.mode = 'ok';
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

/** Sends one request; every answer is Apollo's (one executeHTTPGraphQLRequest per request). */
async function ask(sent: Sent): Promise<Seen> {
  const seen = await send(gw, sent);
  expect(seen.apollo).toBe(1);
  return seen;
}

const errorsOf = (seen: Seen) => (seen.body as { json: { errors?: { message: string; extensions: { code: string; reason?: string } }[] } }).json.errors ?? [];
const codeOf = (seen: Seen) => errorsOf(seen).map((e) => [e.extensions.code, e.extensions.reason]);

async function credits(s: Side): Promise<number> {
  return (await s.app.services.credits.balances([s.accountId]))[0]!;
}

describe('/graphql over HTTP answers through Apollo Server', () => {
  it('a lookup with Apollo Client 4’s Accept, with none, and with each JSON media type: 200, charged once each', async () => {
    const before = await credits(gw);
    const seen = await ask({ body: { query: LOOKUP, variables: { w: 'oak' }, operationName: 'L' } });
    expect(seen.status).toBe(200);
    expect(seen.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    expect(seen.headerNames).toEqual(expect.arrayContaining(['content-length', 'content-type', 'vary']));
    expect(seen.body).toEqual({ json: { data: { lookup: { keyword: 'oak', definition: 'definition of oak', credits: before - 1 } } }, newline: true });
    expect((await ask({ body: { query: LOOKUP, variables: { w: 'elm' } }, accept: null })).headers['content-type']).toBe('application/json; charset=utf-8');
    expect((await ask({ body: { query: LOOKUP, variables: { w: 'ash' }, operationName: null }, accept: '*/*' })).headers['content-type']).toBe('application/json; charset=utf-8');
    const plainJson = await ask({ body: { query: LOOKUP, variables: { w: 'yew' } }, accept: 'application/json', contentType: 'application/json; charset=utf-8' });
    expect([plainJson.status, plainJson.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
    expect(await credits(gw)).toBe(before - 4);
  });

  it('queries, a named operation of several, and the same document again', async () => {
    const doc = 'query A { me { credits } } query B { jobs(first: 1) { nodes { id } pageInfo { hasNextPage } } }';
    const a = await ask({ body: { query: doc, operationName: 'A' } });
    expect(a.body).toEqual({ json: { data: { me: { credits: expect.any(Number) } } }, newline: true });
    const b = await ask({ body: { query: doc, operationName: 'B' } });
    expect(b.body).toEqual({ json: { data: { jobs: { nodes: [], pageInfo: { hasNextPage: false } } } }, newline: true });
    expect((await ask({ body: { query: doc, operationName: 'A' } })).body).toEqual(a.body);
    expect((await ask({ body: { query: '{ __typename }', variables: null } })).body).toEqual({ json: { data: { __typename: 'Query' } }, newline: true });
  });

  it('field errors: insufficient credits (200, nothing charged), a provider outage, and a fault of ours masked and logged', async () => {
    // Words not looked up before: a definition once found is served from the cache without the provider.
    const poor = await ask({ key: 'poor', body: { query: LOOKUP, variables: { w: 'birch' } } });
    expect(poor.status).toBe(200);
    expect(codeOf(poor)).toEqual([['INSUFFICIENT_CREDITS', 'insufficient_credits']]);
    gw.provider.mode = 'unavailable';
    const outage = await ask({ body: { query: LOOKUP, variables: { w: 'maple' } } });
    expect([outage.status, codeOf(outage)[0]?.[0]]).toEqual([200, 'SERVICE_UNAVAILABLE']);
    // A fault of ours (not an AppError): masked, and logged with what it was.
    const fault = vi.spyOn(gw.app.services.balances, 'balances').mockRejectedValueOnce(new TypeError('balance bug'));
    const logged = gw.logs.length;
    const masked = await ask({ body: { query: '{ me { credits } }' } });
    fault.mockRestore();
    expect(codeOf(masked)[0]?.[0]).toBe('INTERNAL_SERVER_ERROR');
    expect(JSON.stringify(masked.body)).not.toContain('balance bug');
    expect(gw.logs.slice(logged).filter((l) => l.includes('graphql: masked internal error') && l.includes('balance bug'))).toHaveLength(1);
  });

  it('bad variables: 400 BAD_USER_INPUT, running nothing', async () => {
    const before = await credits(gw);
    const wrongType = await ask({ body: { query: LOOKUP, variables: { w: 42 } } });
    expect([wrongType.status, codeOf(wrongType)[0]?.[0]]).toEqual([400, 'BAD_USER_INPUT']);
    expect((await ask({ body: { query: LOOKUP } })).status).toBe(400);
    expect((await ask({ body: { query: LOOKUP, variables: {} } })).status).toBe(400);
    expect(await credits(gw)).toBe(before);
  });

  it('refusals before execution: a missing key permission (403) and a rate limit spent by an operation’s fields (429 with its headers)', async () => {
    const forbidden = await ask({ key: 'readOnly', body: { query: LOOKUP, variables: { w: 'oak' } } });
    expect(forbidden.status).toBe(403);
    expect(JSON.stringify(forbidden.body)).toContain('key_permission');
    const three = 'mutation { a: lookup(keyword: "a") { credits } b: lookup(keyword: "b") { credits } c: lookup(keyword: "c") { credits } }';
    const limited = await ask({ key: 'limited', body: { query: three } });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).not.toBeNull();
    expect(limited.headers['ratelimit-policy']).toBe('"default";q=2;w=60');
  });

  it('what Apollo refuses: syntax and validation errors, an unknown operation, subscriptions, other media types, bad fields, batches', async () => {
    const invalid = ['BAD_USER_INPUT', 'invalid_graphql'];
    const cases: [Sent, number, (string | undefined)[], RegExp][] = [
      [{ body: { query: '{ me { credits }' } }, 400, invalid, /^Syntax Error/],
      [{ body: { query: '{ me { nope } }' } }, 400, invalid, /Cannot query field "nope"/],
      [{ body: { query: 'query A { me { credits } }', operationName: 'B' } }, 400, invalid, /Unknown operation named "B"/],
      [{ body: { query: 'query A { me { credits } } query B { me { id } }' } }, 400, invalid, /Must provide operation name/],
      [{ body: { query: 'subscription { jobStatus(jobId: "x") { status } }' } }, 400, ['BAD_USER_INPUT', 'subscription_over_http'], /served over WebSocket/],
      [{ body: { query: '{ me { credits } }' }, accept: 'text/html' }, 406, invalid, /accept/],
      [{ body: { query: '{ me { credits } }', variables: '{}' } }, 400, invalid, /should be provided as an object/],
      [{ body: { query: '{ me { credits } }', operationName: 7 } }, 400, invalid, /must be a string/],
      [{ body: { query: '' } }, 400, invalid, /non-empty `query`/],
      [{ body: { variables: {} } }, 400, invalid, /non-empty `query`/],
      [{ body: [{ query: '{ me { credits } }' }] }, 400, invalid, /batching disabled/],
    ];
    for (const [sent, status, code, message] of cases) {
      const seen = await ask(sent);
      expect(seen.status, JSON.stringify(sent)).toBe(status);
      expect(codeOf(seen)[0], JSON.stringify(sent)).toEqual(code);
      expect(errorsOf(seen)[0]?.message, JSON.stringify(sent)).toMatch(message);
    }
    const upper = await ask({ body: { query: '{ me { credits } }' }, contentType: 'application/json;charset=UTF-8' });
    expect([upper.status, upper.body]).toEqual([200, { json: { data: { me: { credits: expect.any(Number) } } }, newline: true }]);
    // The text that failed once still fails.
    expect((await ask({ body: { query: '{ me { nope } }' } })).status).toBe(400);
  });
});
