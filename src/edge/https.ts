/**
 * Whether the client reached the gateway over HTTPS, decided once for every door: PUBLIC_BASE_URL is
 * https (TLS ends at a load balancer in front, whatever the last hop says), or the request's own
 * protocol is (TLS here, or a trusted proxy's X-Forwarded-Proto). The console's cookie is Secure and
 * `__Host-` prefixed then, and every answer tells browsers to keep to HTTPS (HSTS; never sent over plain
 * HTTP, where it would mean nothing and browsers ignore it).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The client called over HTTPS (see src/edge/https.ts). */
    servedOverHttps: boolean;
  }
}

/** A year, the subdomains too (what HSTS preload lists ask for, without opting in to them). */
const HSTS = 'max-age=31536000; includeSubDomains';

export function registerHttps(app: FastifyInstance, publicBaseUrl: string | undefined): void {
  const publicHttps = publicBaseUrl !== undefined && new URL(publicBaseUrl).protocol === 'https:';
  app.decorateRequest('servedOverHttps', {
    getter(this: FastifyRequest) {
      return publicHttps || this.protocol === 'https';
    },
  });
  // Registered before every other hook, so refusals (421, 503, 401, …) carry it too.
  app.addHook('onRequest', async function strictTransportSecurity(request, reply) {
    if (request.servedOverHttps) reply.header('strict-transport-security', HSTS);
  });
}
