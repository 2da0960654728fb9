/**
 * Query parameters as the console reads them: each one given at most once (a repeated parameter is a
 * 400 naming it, never an array handed on), an empty one read as absent (what a cleared form field
 * sends), looked up as an own property only.
 */
import type { FastifyRequest } from 'fastify';
import { invalid } from '../domain/errors.js';

export function queryParam(request: FastifyRequest, name: string): string | undefined {
  const query = (request.query ?? {}) as Record<string, unknown>;
  if (!Object.hasOwn(query, name)) return undefined;
  const value = query[name];
  if (Array.isArray(value)) throw invalid(name, `${name} must be given once`);
  return typeof value === 'string' && value !== '' ? value : undefined;
}
