/**
 * The console's cookies of signing in: the session's (HttpOnly, SameSite=Strict, Path=/; Secure and
 * `__Host-` over HTTPS), the pending second factor's, a single-use challenge that is not a session,
 * and the sign-up browser's mark.
 */
import { randomBytes } from 'node:crypto';
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

/** A mark as the sign-up cookie carries it: 256 random bits, base64url. */
const MARK = /^[A-Za-z0-9_-]{43}$/;

/** As long as the verification link it goes with. */
const SIGNUP_COOKIE_SECONDS = 24 * 3600;

function signUpCookieName(request: FastifyRequest): string {
  return request.servedOverHttps ? '__Host-console_signup' : 'console_signup';
}

/**
 * Marks this browser as the sender of a sign-up form (the same mark again if it already has one, so
 * every link it asked for works there) and returns the mark. Lax, not Strict: the link is opened from
 * a mail client, a cross-site navigation that a Strict cookie would not come along with.
 */
export function markSignUpBrowser(reply: FastifyReply, request: FastifyRequest): string {
  const mark = signUpBrowserOf(request) ?? randomBytes(32).toString('base64url');
  const options = { httpOnly: true, sameSite: 'lax' as const, path: '/', secure: request.servedOverHttps, maxAge: SIGNUP_COOKIE_SECONDS };
  reply.header('set-cookie', reply.server.serializeCookie(signUpCookieName(request), mark, options));
  return mark;
}

export function signUpBrowserOf(request: FastifyRequest): string | undefined {
  const mark = request.server.parseCookie(request.headers.cookie ?? '')[signUpCookieName(request)];
  return mark && MARK.test(mark) ? mark : undefined;
}
