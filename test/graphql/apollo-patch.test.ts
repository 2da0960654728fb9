import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ApolloServer, HeaderMap } from '@apollo/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * patches/@apollo+server+*.patch (applied by `postinstall`) takes per-request work out of Apollo Server's
 * HTTP pipeline (issue 18). These tests fail if it was not applied, and check that what it touches
 * answers as before: media type negotiation (memoised per Accept value), CSRF prevention (a fast path for
 * application/json), the query hash (the document cache still recognises a query), and the pipeline's
 * hooks (one that no listener implements is not awaited; one that a listener implements still runs).
 */
// The package's entry is dist/cjs/index.js (its package.json is not exported).
const apolloDir = path.resolve(createRequire(import.meta.url).resolve('@apollo/server'), '../../..');

describe('the Apollo Server patch', () => {
  let apollo: ApolloServer;
  beforeAll(async () => {
    apollo = new ApolloServer({ typeDefs: 'type Query { hello: String }', resolvers: { Query: { hello: () => 'world' } }, logger: { debug() {}, info() {}, warn() {}, error() {} } });
    await apollo.start();
  });
  afterAll(() => apollo.stop());

  const run = (method: 'GET' | 'POST', headers: Record<string, string>, query = '{ hello }') =>
    apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: {
        method,
        headers: new HeaderMap(Object.entries(headers)),
        search: method === 'GET' ? `?query=${encodeURIComponent(query)}` : '',
        body: method === 'POST' ? { query } : undefined,
      },
      context: async () => ({}),
    });

  it('is applied (postinstall ran patch-package)', async () => {
    const pipeline = await readFile(path.join(apolloDir, 'dist/esm/requestPipeline.js'), 'utf8');
    expect(pipeline).toContain("hash('sha256', query, 'hex')");
    expect(pipeline).toContain("hooked(requestListeners, 'willSendResponse')");
    expect(await readFile(path.join(apolloDir, 'dist/esm/ApolloServer.js'), 'utf8')).toContain('contentTypeForAccept');
    expect(await readFile(path.join(apolloDir, 'dist/esm/preventCsrf.js'), 'utf8')).toContain("contentType === 'application/json'");
  });

  it('negotiates the media type as before, the second time (memoised) as the first', async () => {
    const cases: [string | undefined, number, string | undefined][] = [
      [undefined, 200, 'application/json; charset=utf-8'],
      ['application/graphql-response+json, application/json;q=0.9', 200, 'application/graphql-response+json; charset=utf-8'],
      ['application/json', 200, 'application/json; charset=utf-8'],
      ['*/*', 200, 'application/json; charset=utf-8'],
      ['text/html', 406, undefined],
    ];
    for (let pass = 0; pass < 2; pass++) {
      for (const [accept, status, type] of cases) {
        const res = await run('POST', { 'content-type': 'application/json', ...(accept ? { accept } : {}) });
        expect(res.status ?? 200, `${accept} (pass ${pass})`).toBe(status);
        if (type) expect(res.headers.get('content-type'), `${accept} (pass ${pass})`).toBe(type);
      }
    }
  });

  it('still prevents CSRF: only a preflighted content type or header lets a GET through', async () => {
    expect((await run('GET', {})).status).toBe(400);
    expect((await run('GET', { 'content-type': 'text/plain' })).status).toBe(400);
    expect((await run('GET', { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' })).status).toBe(400);
    expect((await run('GET', { 'apollo-require-preflight': '1' })).status ?? 200).toBe(200);
    expect((await run('GET', { 'content-type': 'application/json' })).status ?? 200).toBe(200);
    expect((await run('POST', { 'content-type': 'application/json; charset=utf-8' })).status ?? 200).toBe(200);
  });

  it('answers a repeated query from its document cache with the same result', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await run('POST', { 'content-type': 'application/json' }, 'query Q { hello }');
      expect(res.body.kind === 'complete' && JSON.parse(res.body.string)).toEqual({ data: { hello: 'world' } });
    }
  });

  it('still runs every hook a plugin implements, in order, and none it does not', async () => {
    const calls: string[] = [];
    const hooks = new ApolloServer({
      typeDefs: 'type Query { hello: String }',
      resolvers: { Query: { hello: () => 'world' } },
      logger: { debug() {}, info() {}, warn() {}, error() {} },
      plugins: [
        { requestDidStart: async () => ({ didResolveOperation: async () => void calls.push('a:didResolveOperation') }) },
        {
          requestDidStart: async () => ({
            didResolveSource: async () => void calls.push('b:didResolveSource'),
            responseForOperation: async () => (calls.push('b:responseForOperation'), null),
            executionDidStart: async () => ({ executionDidEnd: async () => void calls.push('b:executionDidEnd') }),
            willSendResponse: async ({ response }) => {
              calls.push('b:willSendResponse');
              response.http.headers.set('x-seen', 'yes');
            },
          }),
        },
      ],
    });
    await hooks.start();
    try {
      const res = await hooks.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: 'POST', headers: new HeaderMap([['content-type', 'application/json']]), search: '', body: { query: '{ hello }' } },
        context: async () => ({}),
      });
      expect(res.body.kind === 'complete' && JSON.parse(res.body.string)).toEqual({ data: { hello: 'world' } });
      expect(res.headers.get('x-seen')).toBe('yes');
      expect(calls).toEqual(['b:didResolveSource', 'a:didResolveOperation', 'b:responseForOperation', 'b:executionDidEnd', 'b:willSendResponse']);
    } finally {
      await hooks.stop();
    }
  });
});
