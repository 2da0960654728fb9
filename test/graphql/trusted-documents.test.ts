import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ApolloClient, ApolloLink, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { generatePersistedQueryIdsFromManifest } from '@apollo/persisted-query-lists';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/domain/trusted-documents/service.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';

/**
 * Trusted documents end to end, with the tools a front-end team uses: the app's operations go through
 * `@apollo/generate-persisted-query-manifest` (its CLI, on a source folder), the manifest is uploaded
 * with `PUT /api/graphql/documents`, and Apollo Client's persisted-queries link, reading the manifest
 * through `@apollo/persisted-query-lists`, runs them with a `trustedDocumentsOnly` client token (by hash
 * alone). Anything else with that token is `document_not_trusted`, over HTTP and WebSocket, charging
 * nothing; API keys keep Apollo's automatic persisted queries.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const APP_ORIGIN = 'http://127.0.0.1:5173';
const APP_SOURCE = `
import { gql } from '@apollo/client';
export const BALANCE = gql\`
  query Balance {
    me { credits }
  }
\`;
export const LOOK_UP = gql\`
  mutation LookUp($keyword: String!) {
    lookup(keyword: $keyword) { keyword credits }
  }
\`;
`;

interface Manifest {
  format: string;
  version: number;
  operations: { id: string; name: string; type: string; body: string }[];
}

let t: TestApp;
let account: TestAccount;
let manifest: Manifest;
let scratch: string;

async function api(method: string, p: string, body?: unknown, key = account.key) {
  const res = await fetch(`${t.baseUrl}${p}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function mint(trustedDocumentsOnly: boolean): Promise<string> {
  const res = await api('POST', '/api/client-tokens', { origins: [APP_ORIGIN], trustedDocumentsOnly });
  expect(res.status).toBe(201);
  expect(res.body.trustedDocumentsOnly).toBe(trustedDocumentsOnly);
  return res.body.token;
}

async function graphql(credential: string, body: unknown) {
  const res = await fetch(`${t.baseUrl}/graphql`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credential}`, origin: APP_ORIGIN, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data?: any; errors?: { message: string; extensions: { code: string; reason?: string } }[] } };
}

const balance = async () => (await t.services.credits.balances([account.accountId]))[0]!;

beforeAll(async () => {
  t = await startTestApp(process.env.DEBUG_LOG ? { LOG_LEVEL: 'warn', logStream: { write: (l) => void process.stderr.write(l) } } : {});
  account = await t.createAccountWithKey({ credits: 100 });
  scratch = await mkdtemp(path.join(os.tmpdir(), 'pqm-'));
  await mkdir(path.join(scratch, 'src'));
  await writeFile(path.join(scratch, 'src/operations.ts'), APP_SOURCE);
  await writeFile(path.join(scratch, 'persisted-query-manifest.config.json'), JSON.stringify({ documents: ['src/**/*.ts'], output: 'persisted-query-manifest.json' }));
  await promisify(execFile)(path.join(root, 'node_modules/.bin/generate-persisted-query-manifest'), [], { cwd: scratch });
  manifest = JSON.parse(await readFile(path.join(scratch, 'persisted-query-manifest.json'), 'utf8')) as Manifest;
}, 120_000);
afterAll(async () => {
  await t?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('trusted documents', () => {
  it('the manifest the generator writes registers as it is (200 registered/total), once, and lists without bodies', async () => {
    expect(manifest.format).toBe('apollo-persisted-query-manifest');
    expect(manifest.operations.map((o) => o.name).sort()).toEqual(['Balance', 'LookUp']);
    const put = await api('PUT', '/api/graphql/documents', manifest);
    expect(put).toEqual({ status: 200, body: { registered: 2, total: 2 } });
    expect((await api('PUT', '/api/graphql/documents', manifest)).body).toEqual({ registered: 0, total: 2 });
    const list = await api('GET', '/api/graphql/documents');
    expect(list.status).toBe(200);
    expect(list.body.documents.map((d: { id: string; name: string; type: string; createdAt: string }) => [d.name, d.type, d.id]).sort()).toEqual(
      manifest.operations.map((o) => [o.name, o.type, o.id]).sort(),
    );
    expect(JSON.stringify(list.body)).not.toContain('credits }');
  });

  it('Apollo Client’s persisted-queries link, reading the manifest, runs them by hash with a trustedDocumentsOnly token', async () => {
    const token = await mint(true);
    const sent: any[] = [];
    const recording: typeof fetch = async (input, init) => {
      sent.push(JSON.parse(String(init?.body)));
      return fetch(input, init);
    };
    const client = new ApolloClient({
      link: ApolloLink.from([
        new PersistedQueryLink(generatePersistedQueryIdsFromManifest({ loadManifest: async () => manifest })),
        new HttpLink({ uri: `${t.baseUrl}/graphql`, headers: { authorization: `Bearer ${token}`, origin: APP_ORIGIN }, fetch: recording }),
      ]),
      cache: new InMemoryCache(),
    });
    const before = await balance();
    const looked = await client.mutate({ mutation: gql(manifest.operations.find((o) => o.name === 'LookUp')!.body), variables: { keyword: 'oak' } });
    expect(looked.data).toMatchObject({ lookup: { keyword: 'oak', credits: before - 1 } });
    const read = await client.query({ query: gql(manifest.operations.find((o) => o.name === 'Balance')!.body), fetchPolicy: 'network-only' });
    expect(read.data).toMatchObject({ me: { credits: before - 1 } });
    // By hash alone: the text never left the app.
    expect(sent).toHaveLength(2);
    for (const body of sent) {
      expect(body.query).toBeUndefined();
      expect(manifest.operations.map((o) => o.id)).toContain(body.extensions.persistedQuery.sha256Hash);
    }
  });

  it('with that token, anything unregistered is FORBIDDEN document_not_trusted and charges nothing (full text, unknown hash, a hash with other text)', async () => {
    const token = await mint(true);
    const before = await balance();
    const lookUp = manifest.operations.find((o) => o.name === 'LookUp')!;
    const refusals = [
      { query: 'mutation { lookup(keyword: "elm") { credits } }' },
      { extensions: { persistedQuery: { version: 1, sha256Hash: sha256Hex('query Other { me { id } }') } } },
      { query: 'mutation { lookup(keyword: "elm") { credits } }', extensions: { persistedQuery: { version: 1, sha256Hash: lookUp.id } } },
      { query: `${lookUp.body} `, variables: { keyword: 'elm' } },
    ];
    for (const body of refusals) {
      const res = await graphql(token, body);
      expect(res.status, JSON.stringify(body)).toBe(403);
      expect(res.body.errors).toEqual([{ message: 'Only registered operations may run with this token', extensions: { code: 'FORBIDDEN', reason: 'document_not_trusted' } }]);
    }
    // The registered text in full runs too.
    expect((await graphql(token, { query: lookUp.body, variables: { keyword: 'elm' } })).body.data.lookup.keyword).toBe('elm');
    expect(await balance()).toBe(before - 1);
  });

  it('over WebSocket too: the registered document by hash runs, anything else is refused', async () => {
    const token = await mint(true);
    const balanceOp = manifest.operations.find((o) => o.name === 'Balance')!;
    const client = createClient({
      url: `${t.baseUrl.replace('http', 'ws')}/graphql`,
      // As a page on the app's origin opens it (a client token is bound to its origins).
      webSocketImpl: class extends WebSocket {
        constructor(url: string, protocols: string[]) {
          super(url, protocols, { headers: { origin: APP_ORIGIN } });
        }
      },
      retryAttempts: 0,
      connectionParams: { Authorization: `Bearer ${token}` },
    });
    const once = (payload: { query: string; extensions?: Record<string, unknown> }) =>
      new Promise<{ data?: unknown; error?: any }>((resolve) => {
        let data: unknown;
        client.subscribe(payload, { next: (m) => (data = m.data), error: (e) => resolve({ error: e }), complete: () => resolve({ data }) });
      });
    try {
      expect(await once({ query: '', extensions: { persistedQuery: { version: 1, sha256Hash: balanceOp.id } } })).toMatchObject({ data: { me: { credits: expect.any(Number) } } });
      const refused = await once({ query: '{ me { credits } }' });
      expect(refused.error).toEqual([{ message: 'Only registered operations may run with this token', extensions: { code: 'FORBIDDEN', reason: 'document_not_trusted' } }]);
    } finally {
      await client.dispose();
    }
  });

  it('API keys and other tokens run any document, with Apollo’s automatic persisted queries (PERSISTED_QUERY_NOT_FOUND, then hash and text)', async () => {
    const query = '{ me { credits } }';
    const persistedQuery = { version: 1, sha256Hash: sha256Hex(query) };
    for (const credential of [account.key, await mint(false)]) {
      expect((await graphql(credential, { query: '{ me { id } }' })).body.data.me.id).toBe(account.accountId);
      const fresh = `{ me { credits id __typename } } # ${credential.slice(0, 8)}`;
      const hash = { version: 1, sha256Hash: sha256Hex(fresh) };
      const missing = await graphql(credential, { extensions: { persistedQuery: hash } });
      expect(missing.body.errors?.[0]?.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect((await graphql(credential, { query: fresh, extensions: { persistedQuery: hash } })).body.data.me.id).toBe(account.accountId);
      expect((await graphql(credential, { extensions: { persistedQuery: hash } })).body.data.me.id).toBe(account.accountId);
    }
    expect((await graphql(account.key, { query, extensions: { persistedQuery } })).status).toBe(200);
  });

  it('a manifest with a wrong id, an invalid document or a bad shape is 400 naming the operation, and stores nothing of it', async () => {
    const good = { id: sha256Hex('query Fine { me { id } }'), name: 'Fine', type: 'query', body: 'query Fine { me { id } }' };
    const cases: [unknown, RegExp][] = [
      [{ ...manifest, operations: [good, { ...good, name: 'Wrong', id: 'a'.repeat(64) }] }, /operations\[1\] \(Wrong\): id is not the SHA-256 of body/],
      [{ ...manifest, operations: [good, { id: sha256Hex('query Bad { me { nope } }'), name: 'Bad', type: 'query', body: 'query Bad { me { nope } }' }] }, /operations\[1\] \(Bad\): body is not a valid document for this schema: Cannot query field "nope"/],
      [{ ...manifest, operations: [{ id: sha256Hex('query { me {'), name: 'Broken', type: 'query', body: 'query { me {' }] }, /operations\[0\] \(Broken\): body is not a valid document.*Syntax Error/],
      [{ ...manifest, operations: [{ ...good, type: 'mutation' }] }, /operations\[0\] \(Fine\): type is mutation but the document's operation is a query/],
      [{ ...manifest, format: 'relay' }, /format must be "apollo-persisted-query-manifest"/],
      [{ ...manifest, operations: 'nope' }, /operations must be an array/],
    ];
    for (const [body, message] of cases) {
      const res = await api('PUT', '/api/graphql/documents', body);
      expect(res.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(res.body).toMatchObject({ code: 'invalid_request', error: expect.stringMatching(message) });
    }
    expect((await api('GET', '/api/graphql/documents')).body.documents).toHaveLength(2);
  });

  it('at most 1,000 documents per account; DELETE removes one (204, then 404) and its token stops running it', async () => {
    const other = await t.createAccountWithKey({ credits: 10 });
    const many = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => {
        const body = `query Q${from + i} { me { credits } }`;
        return { id: sha256Hex(body), name: `Q${from + i}`, type: 'query', body };
      });
    expect((await api('PUT', '/api/graphql/documents', { ...manifest, operations: many(0, 1000) }, other.key)).body).toEqual({ registered: 1000, total: 1000 });
    const past = await api('PUT', '/api/graphql/documents', { ...manifest, operations: many(1000, 1) }, other.key);
    expect(past.status).toBe(400);
    expect(past.body.error).toMatch(/at most 1000 documents/);

    const token = await mint(true);
    const balanceOp = manifest.operations.find((o) => o.name === 'Balance')!;
    expect((await graphql(token, { query: balanceOp.body })).status).toBe(200);
    expect((await api('DELETE', `/api/graphql/documents/${balanceOp.id}`)).status).toBe(204);
    expect((await api('DELETE', `/api/graphql/documents/${balanceOp.id}`)).body).toMatchObject({ code: 'document_not_found' });
    expect((await graphql(token, { query: balanceOp.body })).body.errors?.[0]?.extensions.reason).toBe('document_not_trusted');
    // Another account's documents are not this one's.
    expect((await api('DELETE', `/api/graphql/documents/${many(0, 1)[0]!.id}`)).status).toBe(404);
  });
});
