/**
 * The console's cookies of signing in: the session's (HttpOnly, SameSite=Strict, Path=/; Secure and
 * `__Host-` over HTTPS) and the pending second factor's, a single-use challenge that is not a session.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sessionCookieName } from '../edge/auth.js';
import type { ConsoleServices } from './routes/types.js';

/** The pending sign-in's cookie (password right, code awaited): no page opens with it. */
const CHALLENGE_COOKIE = 'console_2fa';

export function setSessionCookie(reply: FastifyReply, request: FastifyRequest, token: string): void {
  reply.header('set-cookie', reply.server.serializeCookie(sessionCookieName(request), token, cookieOptions(request)));
}

export function clearSessionCookie(reply: FastifyReply, request: FastifyRequest): void {
  reply.header('set-cookie', reply.server.serializeCookie(sessionCookieName(request), '', { ...cookieOptions(request), maxAge: 0 }));
}

function cookieOptions(request: FastifyRequest) {
  return { httpOnly: true, sameSite: 'strict' as const, path: '/', secure: request.servedOverHttps };
}

/** Ends the session this browser had before a new one starts. */
export async function endPreviousSession(request: FastifyRequest, sessions: Pick<ConsoleServices['sessions'], 'end'>): Promise<void> {
  const previous = request.server.parseCookie(request.headers.cookie ?? '')[sessionCookieName(request)];
  if (previous) await sessions.end(previous);
}

export function setChallenge(reply: FastifyReply, request: FastifyRequest, challenge: string): void {
  reply.header('set-cookie', reply.server.serializeCookie(CHALLENGE_COOKIE, challenge, { httpOnly: true, sameSite: 'strict', path: '/console', secure: request.servedOverHttps, maxAge: 600 }));
}

export function clearChallenge(reply: FastifyReply, request: FastifyRequest): void {
  reply.header('set-cookie', reply.server.serializeCookie(CHALLENGE_COOKIE, '', { httpOnly: true, sameSite: 'strict', path: '/console', secure: request.servedOverHttps, maxAge: 0 }));
}

export function challengeOf(request: FastifyRequest): string | undefined {
  return request.server.parseCookie(request.headers.cookie ?? '')[CHALLENGE_COOKIE] || undefined;
}
