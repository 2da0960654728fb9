import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useZodSchemas } from '../../src/http/openapi/compilers.js';

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
