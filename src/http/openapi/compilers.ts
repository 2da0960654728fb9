import type { FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { quickAcceptOf } from '../../domain/validation.js';

/**
 * Route schemas are zod (the domain's request rules, src/domain/validation.ts). Requests are validated
 * with them (a refusal becomes the contract's 400 in src/edge/errors.ts). Response schemas only
 * describe: bodies go out as JSON.stringify makes them, because a serializer that refused a body would
 * turn an answer (any catalog error the error handler sends) into a 500, and checking every response
 * would cost the hot path; test/http/openapi.test.ts checks real answers against the document instead.
 * A schema may carry a faster serializer of its own (withSerializer), held to JSON.stringify's bytes.
 */
export function useZodSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(compileValidator);
  app.setSerializerCompiler(({ schema }) => (schema instanceof z.ZodType ? serializers.get(schema) : undefined) ?? json);
}

const json = (data: unknown): string => JSON.stringify(data);

/** Response schemas with a serializer of their own (withSerializer). */
const serializers = new WeakMap<z.ZodType, (data: unknown) => string>();

/**
 * Gives a response schema its own serializer, for a body on the hot path that JSON.stringify writes more
 * slowly than it needs to. `serialize` must answer exactly what JSON.stringify would, for any value it is given (what is
 * not of the shape it knows goes to JSON.stringify).
 */
export function withSerializer<S extends z.ZodType>(schema: S, serialize: (data: unknown) => string): S {
  serializers.set(schema, serialize);
  return schema;
}

type Compile = typeof validatorCompiler;

/**
 * zod's parse of the request part, except where its answer is known without it: a loose object
 * (`z.looseObject`, as a route's `headers`) whose properties are all optional and none of them sent
 * passes as it is. A charging route's headers are that on almost every request (no `Idempotency-Key`),
 * and parsing them would copy every header into a new object first.
 *
 * What passes as it is is answered `true` (valid, nothing replaced), never `{ value: data }`: Fastify
 * assigns a `value` back to the request part, and an assigned `request.headers` is kept beside the
 * raw headers, which makes every later read of `request.headers` merge the two into a new object.
 */
const compileValidator: Compile = (route) => {
  const parse = validatorCompiler(route);
  // A domain schema's quick test (src/domain/validation.ts): what it passes, zod would pass unchanged.
  const quick = quickAcceptOf(route.schema);
  if (quick) return (data: unknown) => quick(data) || parse(data);
  const names = absentPassesAsIs(route.schema);
  if (!names) return parse;
  return (data: unknown) => {
    if (data !== null && typeof data === 'object' && !Array.isArray(data)) {
      let sent = false;
      for (const name of names) if ((data as Record<string, unknown>)[name] !== undefined) sent = true;
      if (!sent) return true;
    }
    return parse(data);
  };
};

/** The property names of a loose object whose properties may all be absent; null for any other schema. */
function absentPassesAsIs(schema: unknown): readonly string[] | null {
  if (!(schema instanceof z.ZodObject)) return null;
  const catchall = schema._zod.def.catchall;
  if (!(catchall instanceof z.ZodUnknown)) return null;
  const shape = schema.shape as Record<string, z.ZodType>;
  const names = Object.keys(shape);
  return names.every((name) => shape[name]!.safeParse(undefined).success) ? names : null;
}
