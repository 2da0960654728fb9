import type { FastifyPluginOptions, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { answerOf, idempotencyKeySchema, idempotencyKeySent, type Idempotency, type IdempotentAttempt } from '../../domain/idempotency/service.js';

/**
 * A REST route module: a Fastify plugin given only the interfaces its routes call. Its routes declare
 * zod schemas (`schema: { body, params, querystring, headers, response }`): the request parts are
 * validated with them and typed from them, and all of it goes into the OpenAPI document.
 */
export type RouteModule<Deps extends FastifyPluginOptions> = FastifyPluginAsyncZod<Deps>;

/** The `headers` schema of a charging route: its optional `Idempotency-Key` (other headers pass). */
export const idempotencyHeaders = z.looseObject({ 'idempotency-key': idempotencyKeySchema.optional() });

/** Base address for URLs handed to clients (signed image URLs). */
export type BaseUrlOf = (request: Pick<FastifyRequest, 'protocol' | 'headers'>) => string;

/**
 * Runs a charging operation under the request's `Idempotency-Key` (if any): a replay of a stored
 * result says so with `Idempotent-Replayed: true`, a stored error too.
 */
export function idempotent<T>(
  idempotency: Idempotency,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: string,
  input: unknown,
  work: (attempt: IdempotentAttempt | null) => Promise<T>,
): Promise<T> {
  const key = request.headers['idempotency-key'];
  // No key (almost every request): the work runs as it is, with no frames of the idempotency's around it.
  if (!idempotencyKeySent(key)) return work(null);
  return underKey(idempotency, request, reply, key, operation, input, work);
}

async function underKey<T>(
  idempotency: Idempotency,
  request: FastifyRequest,
  reply: FastifyReply,
  key: string | string[],
  operation: string,
  input: unknown,
  work: (attempt: IdempotentAttempt | null) => Promise<T>,
): Promise<T> {
  const outcome = await idempotency.run(request.principal!, Array.isArray(key) ? key.join(',') : key, operation, input, work);
  if (outcome.kind !== 'ran') void reply.header('idempotent-replayed', 'true');
  return answerOf(outcome);
}
