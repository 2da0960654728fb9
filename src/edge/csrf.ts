/**
 * Cross-site request refusal for the console's state-changing requests: a browser says where a request
 * comes from (Sec-Fetch-Site in every current browser, Origin on every POST); only the console's own
 * origin may change anything. A client that sends neither must present the synchronizer token of its
 * session (or, before sign-in, the double-submit token of the sign-in form).
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

export type CsrfVerdict = 'same-origin' | 'cross-site' | 'needs-token';

export function originVerdict(request: Pick<FastifyRequest, 'headers' | 'protocol'>, allowedOrigins: readonly string[]): CsrfVerdict {
  const site = request.headers['sec-fetch-site'];
  const origin = request.headers.origin;
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return 'cross-site';
  if (typeof origin === 'string') {
    const own = [`${request.protocol}://${request.headers.host ?? ''}`, ...allowedOrigins];
    return own.includes(origin) ? 'same-origin' : 'cross-site';
  }
  return typeof site === 'string' ? 'same-origin' : 'needs-token';
}

export function tokensMatch(given: unknown, expected: string | undefined): boolean {
  if (typeof given !== 'string' || !expected || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}
