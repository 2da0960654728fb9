/**
 * Form tokens for clients that send neither Sec-Fetch-Site nor Origin (cross-site requests were refused
 * by the edge already): a signed-in form carries its session's synchronizer token; the sign-in form,
 * which has no session yet, a double-submit token also set in a cookie.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
import { originVerdict, tokensMatch } from '../edge/csrf.js';

/** The sign-in form's double-submit token (there is no session yet to hold one). */
const FORM_COOKIE = 'console_form';

/** A preHandler for the console scope: a state change without either header must bring its token. */
export async function checkFormToken(request: FastifyRequest): Promise<void> {
  if (request.method === 'GET' || request.method === 'HEAD' || originVerdict(request, []) !== 'needs-token') return;
  const given = (request.body as Record<string, unknown> | undefined)?._csrf ?? request.headers['x-csrf-token'];
  const expected = request.consoleCaller?.csrfToken ?? request.server.parseCookie(request.headers.cookie ?? '')[FORM_COOKIE];
  if (!tokensMatch(given, expected)) throw new AppError('cross_site_request');
}

/** A double-submit token for the sign-in form, in a cookie and in the form. */
export function issueFormToken(reply: FastifyReply): string {
  const token = randomBytes(18).toString('base64url');
  reply.header('set-cookie', reply.server.serializeCookie(FORM_COOKIE, token, { httpOnly: true, sameSite: 'strict', path: '/console' }));
  return token;
}
