import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useZodSchemas, withSerializer } from '../../src/http/openapi/compilers.js';
import { serializeDefinitionResult } from '../../src/http/schemas/definition-json.js';

/** The request validator: zod's parse, but for a loose object of optional properties none of which was sent. */
async function appWith(headers: z.ZodType) {
  const app = Fastify();
  useZodSchemas(app);
  app.post('/h', { schema: { headers } }, async (request) => ({ seen: request.headers['x-tag'] ?? null, other: request.headers['x-other'] ?? null }));
  await app.ready();
  return app;
}

describe('route validation (zod)', () => {
  const optional = z.looseObject({ 'x-tag': z.string().regex(/^[a-z]+$/, 'x-tag must be lowercase letters').optional() });

  it('a loose object of optional properties, none sent: passes with every other header as it was', async () => {
    const app = await appWith(optional);
    const res = await app.inject({ method: 'POST', url: '/h', headers: { 'x-other': 'kept' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ seen: null, other: 'kept' });
  });

  it('headers that pass as they are stay the raw headers (no merged copy on every later read)', async () => {
    const app = Fastify();
    useZodSchemas(app);
    app.post('/raw', { schema: { headers: optional } }, async (request) => ({ raw: request.headers === request.raw.headers }));
    await app.ready();
    expect((await app.inject({ method: 'POST', url: '/raw', headers: { 'x-other': 'kept' } })).json()).toEqual({ raw: true });
  });

  it('the same schema still judges a property that is sent, an empty one included', async () => {
    const app = await appWith(optional);
    expect((await app.inject({ method: 'POST', url: '/h', headers: { 'x-tag': 'abc' } })).json()).toEqual({ seen: 'abc', other: null });
    for (const bad of ['ABC', '']) {
      const res = await app.inject({ method: 'POST', url: '/h', headers: { 'x-tag': bad } });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(res.body).toContain('x-tag must be lowercase letters');
    }
  });

  it('a required property is never taken as passing when absent', async () => {
    const app = await appWith(z.looseObject({ 'x-tag': z.string() }));
    expect((await app.inject({ method: 'POST', url: '/h' })).statusCode).toBe(400);
    expect((await app.inject({ method: 'POST', url: '/h', headers: { 'x-tag': 'a' } })).statusCode).toBe(200);
  });

  it('a body that is not an object (an array, a string) is still refused by the same loose schema', async () => {
    const app = Fastify();
    useZodSchemas(app);
    app.post('/b', { schema: { body: optional } }, async () => ({ ok: true }));
    await app.ready();
    for (const payload of ['[]', '"text"']) {
      const res = await app.inject({ method: 'POST', url: '/b', headers: { 'content-type': 'application/json' }, payload });
      expect(res.statusCode, payload).toBe(400);
    }
    expect((await app.inject({ method: 'POST', url: '/b', headers: { 'content-type': 'application/json' }, payload: '{}' })).statusCode).toBe(200);
  });
});

describe('response serializers', () => {
  it('a response schema with a serializer of its own is written by it; any other by JSON.stringify', async () => {
    const app = Fastify();
    useZodSchemas(app);
    const own = withSerializer(z.object({ n: z.number() }), (data) => `{"n":${(data as { n: number }).n},"own":true}`);
    app.get('/own', { schema: { response: { 200: own } } }, async () => ({ n: 1 }));
    app.get('/plain', { schema: { response: { 200: z.object({ n: z.number() }) } } }, async () => ({ n: 2 }));
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/own' })).body).toBe('{"n":1,"own":true}');
    expect((await app.inject({ method: 'GET', url: '/plain' })).body).toBe('{"n":2}');
  });

  it("the lookup's answer: byte for byte what JSON.stringify writes, whatever it is given", () => {
    const texts = ['dog', '', 'tree\n(noun) 1. a tall plant\n(verb) 2. "quoted" \\ back\tslash', '\u2028\u2029', '🐈 e\u0301', '\ud800 lone', '\u0000\u001f', '</script>'];
    const values: unknown[] = [null, undefined, 5, 'text', [], [1, 2], new Date(0), {}, { keyword: 'dog' }];
    for (const keyword of texts)
      for (const definition of texts)
        for (const credits of [0, -0, 7, -3, 1.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY]) values.push({ keyword, definition, credits });
    values.push(
      { definition: 'd', keyword: 'k', credits: 1 },
      { keyword: 'k', definition: 'd', credits: 1, extra: true },
      { keyword: 'k', definition: 'd' },
      { keyword: 1, definition: 'd', credits: 1 },
      { keyword: 'k', definition: null, credits: 1 },
      { keyword: 'k', definition: 'd', credits: '1' },
      { keyword: 'k', definition: 'd', credits: 1n.toString() },
      { keyword: 'k', definition: 'd', credits: 1, toJSON: () => 'own' },
      Object.assign(Object.create({ toJSON: () => 'inherited' }) as object, { keyword: 'k', definition: 'd', credits: 1 }),
      Object.assign(Object.create({ extra: 1 }) as object, { keyword: 'k', definition: 'd', credits: 1 }),
      Object.assign(Object.create(null) as object, { keyword: 'k', definition: 'd', credits: 1 }),
    );
    let fast = 0;
    for (const value of values) {
      // Twice: the second answer may come from the kept JSON text.
      for (let i = 0; i < 2; i++) expect(serializeDefinitionResult(value), String(JSON.stringify(value))).toBe(JSON.stringify(value));
      if (value && typeof value === 'object' && Object.keys(value).join() === 'keyword,definition,credits') fast++;
    }
    expect(fast).toBeGreaterThan(texts.length * texts.length);
  });
});
