import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { BuiltinImageProvider } from '../../src/providers/images/builtin.js';
import { wrap } from '../../src/providers/images/builtin.js';
import { OpenAiImageProvider } from '../../src/providers/images/openai.js';
import { ProviderError, isRetryableError } from '../../src/providers/images/types.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.js';

describe('builtin image provider', () => {
  const provider = new BuiltinImageProvider();

  it('renders a real PNG, deterministic per prompt, different across prompts', async () => {
    const a1 = await provider.generate('a red fox in the snow');
    const a2 = await provider.generate('a red fox in the snow');
    const b = await provider.generate('a blue whale at dusk');
    expect(a1.contentType).toBe('image/png');
    expect(a1.data.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(a1.data.equals(a2.data)).toBe(true);
    expect(a1.data.equals(b.data)).toBe(false);
    const meta = await sharp(a1.data).metadata();
    expect(meta.format).toBe('png');
    expect(meta.width).toBe(256);
    expect(meta.height).toBe(256);
  });

  it('survives prompts that are hostile to SVG', async () => {
    for (const p of ['<script>&amp;"\'</svg>', '\u0001\u0002 ctrl', '🦊'.repeat(500), 'x'.repeat(2000)]) {
      const img = await provider.generate(p);
      expect((await sharp(img.data).metadata()).format).toBe('png');
    }
  });

  it('wraps captions into bounded lines', () => {
    expect(wrap('one two three', 7, 3)).toEqual(['one two', 'three']);
    const lines = wrap('a'.repeat(100), 10, 3);
    expect(lines).toHaveLength(3);
    expect(lines[2].endsWith('…')).toBe(true);
  });
});

describe('openai-compatible image provider', () => {
  let fake: FakeOpenAi;
  const make = (over: Partial<ConstructorParameters<typeof OpenAiImageProvider>[0]> = {}) =>
    new OpenAiImageProvider({
      baseUrl: fake.url,
      apiKey: 'sk-test',
      model: 'test-model',
      size: '256x256',
      // Attempts time out only where a test means them to: a busy machine can make a local answer slow.
      timeoutMs: 15_000,
      retries: 2,
      backoffBaseMs: 5,
      ...over,
    });

  beforeAll(async () => {
    fake = await startFakeOpenAi();
  });
  afterAll(async () => {
    await fake.close();
  });

  it('posts the OpenAI request shape and decodes b64_json', async () => {
    const img = await make().generate('hello');
    expect(img.contentType).toBe('image/png');
    expect((await sharp(img.data).metadata()).width).toBe(256);
    const req = fake.requests.at(-1)!;
    expect(req.authorization).toBe('Bearer sk-test');
    expect(req.body).toMatchObject({ model: 'test-model', prompt: 'hello', n: 1, size: '256x256', response_format: 'b64_json' });
  });

  it('passes size and output_format, offers what it is configured to, and sends seed and negative_prompt only where taken', async () => {
    const plain = make({ sizes: ['256x256', '512x256'], formats: ['webp', 'jpeg'] });
    expect(plain.offer).toEqual({ sizes: ['256x256', '512x256'], defaultSize: '256x256', formats: ['png', 'webp', 'jpeg'], seed: false, negativePrompt: false });
    const img = await plain.generate('sized', { size: { width: 512, height: 256 }, format: 'webp', seed: 7, negativePrompt: 'dogs' });
    expect(img).toMatchObject({ contentType: 'image/webp', width: 512, height: 256 });
    const meta = await sharp(img.data).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['webp', 512, 256]);
    const sent = fake.requests.at(-1)!.body;
    expect(sent).toMatchObject({ size: '512x256', output_format: 'webp' });
    expect(sent).not.toHaveProperty('seed');
    expect(sent).not.toHaveProperty('negative_prompt');
    // PNG is the API's own default: not sent, so endpoints without output_format keep working.
    await plain.generate('png please', { format: 'png' });
    expect(fake.requests.at(-1)!.body).not.toHaveProperty('output_format');

    const open = make({ seed: true, negativePrompt: true });
    expect(open.offer).toMatchObject({ sizes: ['256x256'], formats: ['png'], seed: true, negativePrompt: true });
    await open.generate('seeded', { seed: 7, negativePrompt: 'dogs' });
    expect(fake.requests.at(-1)!.body).toMatchObject({ seed: 7, negative_prompt: 'dogs' });
  });

  it('retries 5xx with backoff and then succeeds', async () => {
    const img = await make().generate('[flaky:2] recovers');
    expect(img.contentType).toBe('image/png');
    expect(fake.calls.get('[flaky:2] recovers')).toBe(3);
  });

  it('gives up after the bounded retries with a retryable error', async () => {
    const err = await make({ retries: 1 }).generate('[flaky:5] stays down').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ code: 'provider_server_error', retryable: true, status: 503 });
    expect(fake.calls.get('[flaky:5] stays down')).toBe(2);
  });

  it('retries 429', async () => {
    const err = await make({ retries: 2 }).generate('[ratelimit] busy').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'provider_rate_limited', retryable: true });
    expect(fake.calls.get('[ratelimit] busy')).toBe(3);
  });

  it('does not retry a 4xx, and says so by code', async () => {
    const err = await make().generate('[reject] nope').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'provider_rejected', retryable: false, status: 400 });
    expect(String((err as Error).message)).toContain('rejected by the safety system');
    expect(fake.calls.get('[reject] nope')).toBe(1);
    // Workers decide on the plain field, which survives serialization.
    expect(isRetryableError(JSON.parse(JSON.stringify({ ...(err as object) })))).toBe(false);
  });

  it('times out and retries a slow upstream', async () => {
    const err = await make({ timeoutMs: 100, retries: 1 }).generate('[slow:400] sleepy').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'provider_timeout', retryable: true });
    expect(fake.calls.get('[slow:400] sleepy')).toBe(2);
  });

  it('treats an unreachable upstream as a retryable network error', async () => {
    const err = await make({ baseUrl: 'http://127.0.0.1:1/v1', retries: 1 }).generate('x').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'provider_network_error', retryable: true });
  });

  it('rejects a response that is not an image, without retrying', async () => {
    const err = await make().generate('[garbage] junk').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'provider_bad_response', retryable: false });
    expect(fake.calls.get('[garbage] junk')).toBe(1);
  });

  it('stops when aborted', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const err = await make({ timeoutMs: 5000 }).generate('[slow:1000] abort me', { signal: ac.signal }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'provider_aborted', retryable: false });
  });
});
