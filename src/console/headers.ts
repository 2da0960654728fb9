/** The console's security headers: a strict Content-Security-Policy, no framing, no caching of pages. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';

/** Images may also come from PUBLIC_BASE_URL, where signed image URLs point: ` <origin>` or ''. */
export function imageOriginSource(config: Pick<Config, 'PUBLIC_BASE_URL'>): string {
  return config.PUBLIC_BASE_URL ? ` ${new URL(config.PUBLIC_BASE_URL).origin}` : '';
}

export function consoleCsp(config: Pick<Config, 'PUBLIC_BASE_URL'>, formTargets = ''): string {
  const imageOrigin = imageOriginSource(config);
  return `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:${imageOrigin}; connect-src 'self'; form-action 'self'${formTargets}; frame-ancestors 'none'; base-uri 'none'`;
}

/** Stripe Checkout's hosted pages. */
export const CHECKOUT_ORIGIN = 'https://checkout.stripe.com';

/**
 * The Billing page's policy: its pack forms are answered with a 303 to Checkout, and form-action also
 * governs where a form's redirects may go: Checkout's origin (and STRIPE_API_BASE's, the tests'
 * stand-in) is allowed there, on this page only.
 */
export function billingCsp(config: Pick<Config, 'PUBLIC_BASE_URL' | 'STRIPE_API_BASE'>): string {
  const standIn = config.STRIPE_API_BASE ? ` ${new URL(config.STRIPE_API_BASE).origin}` : '';
  return consoleCsp(config, ` ${CHECKOUT_ORIGIN}${standIn}`);
}

/** An onSend hook setting them on every console response (assets set their own cache-control). */
export function securityHeaders(csp: string) {
  return async (_request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    // A page with needs of its own (the explorer) sets its policy itself.
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', csp);
    reply.header('x-frame-options', 'DENY');
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    return payload;
  };
}
