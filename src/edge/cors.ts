/**
 * CORS for the doors browser apps call (`/graphql`: routes with `config: { cors: true }`). There are
 * no cookies anywhere, so no `Access-Control-Allow-Credentials`: what a browser may read is decided by
 * the credential. A request that presents an API key never gets `Access-Control-Allow-Origin` (a page
 * holding a leaked key cannot read the answers); every other request from a page (a client token, or
 * none yet), refusals included, does, so the app can read its 401/403/429 and the request id.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { presentsApiKey } from './credentials.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Browser apps on other origins may call this route (src/edge/cors.ts). */
    cors?: boolean;
  }
}

export const CORS_ALLOWED_HEADERS = ['authorization', 'content-type', 'idempotency-key', 'apollo-require-preflight', 'x-apollo-operation-name', 'x-request-id'];
export const CORS_EXPOSED_HEADERS = ['x-request-id', 'retry-after', 'ratelimit', 'ratelimit-policy', 'idempotent-replayed'];
/** Seconds a browser may cache a preflight (Chromium caps it at 7200). */
export const CORS_MAX_AGE_SECONDS = 7200;

/** Register early (before authentication), so that every refusal of a CORS route carries the headers. */
export function registerCors(app: FastifyInstance): void {
  app.addHook('onRequest', async function corsHeaders(request, reply) {
    if (!request.routeOptions.config?.cors || request.method === 'OPTIONS') return;
    reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || presentsApiKey(request.headers.authorization)) return;
    reply.headers({ 'access-control-allow-origin': origin, 'access-control-expose-headers': CORS_EXPOSED_HEADERS.join(', ') });
  });
}

/** The preflight of a CORS route: any origin may ask; the answer to the request itself says who may read it. */
export function preflightRoute(url: string, methods: readonly string[]): RouteOptions {
  return {
    method: 'OPTIONS',
    url,
    config: { withoutDatabase: true, cors: true },
    handler: async (request, reply) => {
      reply.header('vary', 'Origin');
      const origin = request.headers.origin;
      if (typeof origin === 'string') {
        reply.headers({
          'access-control-allow-origin': origin,
          'access-control-allow-methods': methods.join(', '),
          'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
          'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
        });
      }
      return reply.code(204).send();
    },
  };
}
