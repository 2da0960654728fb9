/**
 * The Host header, checked once for every door before anything else runs:
 *  - HTTP/1.1 requires one (Node would refuse a request without it with an empty 400; the edge
 *    answers in the contract's shape);
 *  - with ALLOWED_HOSTS set, a Host not on the list is a 421: image URLs take their base from the
 *    Host when PUBLIC_BASE_URL is unset, so a forged Host must not reach them. Health routes
 *    (`config: { anyHost: true }`) answer whatever the Host: probes call by address.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../domain/errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answer whatever the Host header (health probes). */
    anyHost?: boolean;
  }
}

/** True when a Host header may be served: always without a list; else its host (and port, if the entry names one) is listed. */
export type HostPolicy = (host: string | undefined) => boolean;

export function hostPolicy(allowed: readonly string[] | undefined): HostPolicy {
  if (!allowed) return () => true;
  const entries = allowed.map(splitHost);
  return (host) => {
    if (!host) return false;
    const given = splitHost(host.toLowerCase());
    return entries.some((e) => e.name === given.name && (e.port === undefined || e.port === given.port));
  };
}

/** The check for a request: undefined when it may go on, else the error to answer with. */
export function hostRefusal(request: { headers: { host?: string }; httpVersionMajor: number; httpVersionMinor: number }, allowed: HostPolicy): AppError | undefined {
  const host = request.headers.host;
  if ((host === undefined || host === '') && request.httpVersionMajor === 1 && request.httpVersionMinor >= 1) {
    return new AppError('malformed_request', { message: 'Missing Host header' });
  }
  return allowed(host) ? undefined : new AppError('host_not_allowed');
}

export function registerHostCheck(app: FastifyInstance, allowed: HostPolicy): void {
  app.addHook('onRequest', async function checkHost(request) {
    const refusal = hostRefusal(request.raw, allowed);
    if (refusal && !(refusal.code === 'host_not_allowed' && request.routeOptions.config?.anyHost)) throw refusal;
  });
}

function splitHost(host: string): { name: string; port: string | undefined } {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(host);
  return m ? { name: m[1]!, port: m[2] } : { name: host, port: undefined };
}
