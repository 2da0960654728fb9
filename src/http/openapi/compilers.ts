import type { FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';

/**
 * Route schemas are zod (the domain's request rules, src/domain/validation.ts). Requests are validated
 * with them (a refusal becomes the contract's 400 in src/edge/errors.ts). Response schemas only
 * describe: bodies go out as JSON.stringify makes them, because a serializer that refused a body would
 * turn an answer (any catalog error the error handler sends) into a 500, and checking every response
 * would cost the hot path; test/http/openapi.test.ts checks real answers against the document instead.
 */
export function useZodSchemas(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}
