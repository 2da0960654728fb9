/**
 * Idempotency-Key on the charging operations (REST header, GraphQL argument), Stripe's semantics: the
 * first result is replayed for the same key and input, never charged again; another input is 422; a
 * request still running is 409; a retryable failure is not stored, and the retry pays once.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DefinitionProvider } from '../../src/domain/definitions/types.js';
import { DefinitionProviderError } from '../../src/domain/definitions/types.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

/** A provider the test holds at a gate, or makes fail. */
class GatedProvider implements DefinitionProvider {
  readonly name = 'gated';
  calls = 0;
  gate: Promise<void> | null = null;
  failNext = false;
  async define(keyword: string): Promise<string> {
    this.calls++;
    if (this.failNext) {
      this.failNext = false;
      throw new DefinitionProviderError('unavailable', 'upstream timed out');
    }
    await this.gate;
    return `definition of ${keyword}`;
  }
}

const provider = new GatedProvider();
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ DEFINITION_CACHE_TTL_SECONDS: '0', deps: { definitionProvider: provider } });
});
afterAll(async () => {
  await t?.close();
});

async function post(path: string, body: unknown, key: string, idem?: string) {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(idem !== undefined ? { 'idempotency-key': idem } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: (await res.json()) as any };
}

const balance = async (accountId: string) => (await t.services.credits.balances([accountId]))[0];

describe('REST Idempotency-Key', () => {
  it('replays the first result for the same key and body, charging once', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    const key = randomUUID();
    const first = await post('/api/playground/query', { keyword: 'oak' }, acc.key, key);
    const again = await post('/api/playground/query', { keyword: 'oak' }, acc.key, key);
    expect(first).toMatchObject({ status: 200, replayed: null, body: { keyword: 'oak', credits: 4 } });
    expect(again).toMatchObject({ status: 200, replayed: 'true', body: first.body });
    expect(await balance(acc.accountId)).toBe(4);
    // Without a key, or with another one, it is a new request.
    expect((await post('/api/playground/query', { keyword: 'oak' }, acc.key)).body.credits).toBe(3);
    expect((await post('/api/playground/query', { keyword: 'oak' }, acc.key, randomUUID())).body.credits).toBe(2);
  });

  it('an image job is created once: the same job id, one charge', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    const key = randomUUID();
    const first = await post('/api/playground/images', { prompts: ['a', 'b'] }, acc.key, key);
    const again = await post('/api/playground/images', { prompts: ['a', 'b'] }, acc.key, key);
    expect(first.status).toBe(201);
    expect(again).toMatchObject({ status: 201, replayed: 'true', body: { jobId: first.body.jobId, credits: 3 } });
    expect(await balance(acc.accountId)).toBe(3);
  });

  it('the same key with another body is 422 idempotency_key_reused, and charges nothing', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    const key = randomUUID();
    await post('/api/playground/query', { keyword: 'oak' }, acc.key, key);
    const other = await post('/api/playground/query', { keyword: 'elm' }, acc.key, key);
    expect(other).toMatchObject({ status: 422, body: { code: 'idempotency_key_reused', error: 'Idempotency-Key was already used with a different request' } });
    expect(await balance(acc.accountId)).toBe(4);
  });

  it('a request still running with the key is 409, then the finished result replays', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    const key = randomUUID();
    let open!: () => void;
    provider.gate = new Promise((resolve) => (open = resolve));
    const calls = provider.calls;
    const slow = post('/api/playground/query', { keyword: 'ash' }, acc.key, key);
    // Wait until the first request is inside the provider, then try again.
    const deadline = Date.now() + 30_000;
    while (provider.calls === calls && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    const busy = await post('/api/playground/query', { keyword: 'ash' }, acc.key, key);
    expect(busy).toMatchObject({ status: 409, body: { code: 'idempotency_key_in_progress' } });
    open();
    provider.gate = null;
    expect((await slow).status).toBe(200);
    expect((await post('/api/playground/query', { keyword: 'ash' }, acc.key, key)).replayed).toBe('true');
    expect(await balance(acc.accountId)).toBe(4);
  });

  it('a client error is stored and replayed too (402 stays 402 for that key)', async () => {
    const acc = await t.createAccountWithKey({ credits: 0 });
    const key = randomUUID();
    expect((await post('/api/playground/query', { keyword: 'yew' }, acc.key, key)).status).toBe(402);
    await t.services.credits.grant(acc.accountId, 5, `grant:${randomUUID()}`, { actor: 'test', ip: null, host: 'test' });
    const again = await post('/api/playground/query', { keyword: 'yew' }, acc.key, key);
    expect(again).toMatchObject({ status: 402, replayed: 'true', body: { code: 'insufficient_credits' } });
    expect(await balance(acc.accountId)).toBe(5);
  });

  it('a retryable failure (503) is not stored: the retry runs, and the credit is paid once', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    const key = randomUUID();
    provider.failNext = true;
    const failed = await post('/api/playground/query', { keyword: 'fir' }, acc.key, key);
    expect(failed.status).toBe(503);
    const retried = await post('/api/playground/query', { keyword: 'fir' }, acc.key, key);
    expect(retried).toMatchObject({ status: 200, replayed: null, body: { credits: 4 } });
    expect(await balance(acc.accountId)).toBe(4);
  });

  it('keys are per API key: another key of the same account does not see them', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    const second = await t.services.keys.create(acc.accountId, 'second', { actor: 'test', ip: null, host: 'test' });
    const key = randomUUID();
    await post('/api/playground/query', { keyword: 'oak' }, acc.key, key);
    const other = await post('/api/playground/query', { keyword: 'elm' }, second.key, key);
    expect(other).toMatchObject({ status: 200, replayed: null });
  });

  it('a malformed key is a 400 naming the rule, and nothing is charged', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    for (const bad of ['x'.repeat(256), 'has space', '']) {
      const res = await post('/api/playground/query', { keyword: 'oak' }, acc.key, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error).toContain('Idempotency-Key must be');
    }
    expect(await balance(acc.accountId)).toBe(5);
  });
});

describe('REST: a body that fails validation is refused before the key is claimed', () => {
  it('the corrected request with the same key runs, charged once', async () => {
    const acc = await t.createAccountWithKey({ credits: 5 });
    expect((await post('/api/playground/query', { keyword: ' ' }, acc.key, 'fix-1')).status).toBe(400);
    const fixed = await post('/api/playground/query', { keyword: 'oak' }, acc.key, 'fix-1');
    expect(fixed).toMatchObject({ status: 200, replayed: null, body: { keyword: 'oak', credits: 4 } });
  });
});

describe('GraphQL idempotencyKey', () => {
  it('replays lookup and generate for the same key and arguments; 422 for other arguments', async () => {
    const acc = await t.createAccountWithKey({ credits: 10 });
    const gql = async (query: string) => {
      const res = await fetch(`${t.baseUrl}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
      return (await res.json()) as any;
    };
    const lookup = 'mutation { lookup(keyword: "oak", idempotencyKey: "k-1") { keyword credits } }';
    const a = await gql(lookup);
    const b = await gql(lookup);
    expect(a.data.lookup).toEqual({ keyword: 'oak', credits: 9 });
    expect(b.data.lookup).toEqual(a.data.lookup);
    const reused = await gql('mutation { lookup(keyword: "elm", idempotencyKey: "k-1") { credits } }');
    expect(reused.errors[0]).toMatchObject({ message: 'Idempotency-Key was already used with a different request', extensions: { code: 'BAD_USER_INPUT' } });
    const generate = 'mutation { generate(prompts: ["x"], idempotencyKey: "k-2") { jobId credits } }';
    const g1 = await gql(generate);
    const g2 = await gql(generate);
    expect(g2.data.generate).toEqual(g1.data.generate);
    expect(await balance(acc.accountId)).toBe(8);
  });
});
