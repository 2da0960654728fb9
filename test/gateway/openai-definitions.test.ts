import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DefinitionProviderError } from '../../src/domain/definitions/types.js';
import { OpenAiDefinitionProvider } from '../../src/providers/definitions/openai.js';

/** A local OpenAI-compatible chat-completions server whose answers each test scripts. */
type Reply = { status: number; body: unknown; headers?: Record<string, string>; delayMs?: number };
let server: Server;
let baseUrl: string;
let replies: Reply[] = [];
let requests: { path: string; auth?: string; body: any }[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', auth: req.headers.authorization, body: JSON.parse(raw || 'null') });
      const reply = replies.shift() ?? { status: 500, body: { error: { message: 'no scripted reply' } } };
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
      }, reply.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  replies = [];
  requests = [];
});

const answer = (content: unknown): Reply => ({ status: 200, body: { choices: [{ message: { role: 'assistant', content } }] } });
// Attempts time out only where a test means them to: a busy machine can make a local answer slow.
const provider = (over: Partial<ConstructorParameters<typeof OpenAiDefinitionProvider>[0]> = {}) =>
  new OpenAiDefinitionProvider({ baseUrl, apiKey: 'sk-test', model: 'tiny', timeoutMs: 15_000, retries: 2, backoffBaseMs: 5, backoffMaxMs: 20, ...over });

describe('OpenAI-compatible definition provider', () => {
  it('posts a chat completion and returns the trimmed answer', async () => {
    replies.push(answer('  A small domesticated feline.  '));
    expect(await provider().define('cat')).toBe('A small domesticated feline.');
    expect(requests).toHaveLength(1);
    expect(requests[0]!.path).toBe('/v1/chat/completions');
    expect(requests[0]!.auth).toBe('Bearer sk-test');
    expect(requests[0]!.body.model).toBe('tiny');
    expect(requests[0]!.body.messages.at(-1).content).toContain('"cat"');
  });

  it('NO_DEFINITION means the model knows none (null, so the lookup says so)', async () => {
    replies.push(answer('NO_DEFINITION'));
    expect(await provider().define('qzx')).toBeNull();
  });

  it('retries 5xx and 429 (bounded), then succeeds', async () => {
    replies.push({ status: 503, body: {} }, { status: 429, body: {}, headers: { 'retry-after': '0' } }, answer('ok'));
    expect(await provider().define('x')).toBe('ok');
    expect(requests).toHaveLength(3);
  });

  it('gives up after the retries: unavailable (503)', async () => {
    replies.push({ status: 500, body: {} }, { status: 502, body: {} }, { status: 500, body: {} }, answer('too late'));
    const err = await provider().define('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DefinitionProviderError);
    expect((err as DefinitionProviderError).kind).toBe('unavailable');
    expect(requests).toHaveLength(3);
  });

  it('times out each attempt', async () => {
    // The server, in this process, arms its 400 ms timer after the client armed its 100 ms one, so the
    // client's always fires first, however busy the machine.
    replies.push({ ...answer('slow'), delayMs: 400 }, { ...answer('slow'), delayMs: 400 });
    const err = await provider({ timeoutMs: 100, retries: 1 }).define('x').catch((e: unknown) => e);
    expect((err as DefinitionProviderError).kind).toBe('unavailable');
    expect((err as Error).message).toMatch(/timed out/);
    expect(requests).toHaveLength(2);
  });

  it('a 4xx or a malformed answer fails at once (502), without retries', async () => {
    replies.push({ status: 400, body: { error: { message: 'bad model' } } });
    let err = await provider().define('x').catch((e: unknown) => e);
    expect((err as DefinitionProviderError).kind).toBe('failed');
    expect(requests).toHaveLength(1);
    for (const bad of ['not json', { choices: [] }, { choices: [{ message: { content: 7 } }] }, { choices: [{ message: { content: '   ' } }] }]) {
      replies.push({ status: 200, body: bad });
      err = await provider().define('x').catch((e: unknown) => e);
      expect((err as DefinitionProviderError).kind).toBe('failed');
    }
  });

  it('an unreachable endpoint is unavailable', async () => {
    const err = await provider({ baseUrl: 'http://127.0.0.1:1/v1', retries: 0 }).define('x').catch((e: unknown) => e);
    expect((err as DefinitionProviderError).kind).toBe('unavailable');
  });

  it('names itself by model, for the cache', () => {
    expect(provider().name).toBe('openai:tiny');
  });
});
