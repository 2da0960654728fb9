/**
 * An account whose owners require two-factor authentication: a member without it is sent to Settings
 * to set it up before any other page (a state change elsewhere is refused), whatever link they follow.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';

/** What such a member may still open: setting it up, signing out, the assets, another of their accounts. */
const OPEN = /^\/console\/(settings|sign-out|sign-in|assets\/|accounts\/)/;

export async function requireTwoFactor(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (!request.consoleCaller?.mustSetUp2fa || OPEN.test(request.url)) return;
  if (request.method !== 'GET' && request.method !== 'HEAD') throw new AppError('two_factor_required');
  return reply.code(303).header('location', '/console/settings').send();
}
