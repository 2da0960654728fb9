/**
 * Console helpers for HTTP-level tests: a user with a password, and sign-in as a browser would do it
 * (a same-origin form post), returning the session cookie.
 */
import { randomUUID } from 'node:crypto';
import type { TestApp } from './app.js';

export interface ConsoleUser {
  accountId: string;
  email: string;
  password: string;
  /** An API key of the same account. */
  key: string;
  keyId: string;
}

export async function createConsoleUser(t: TestApp, opts: { credits?: number } = {}): Promise<ConsoleUser> {
  const account = await t.createAccountWithKey({ credits: opts.credits ?? 10 });
  const email = `user-${randomUUID().slice(0, 8)}@example.com`;
  const password = `pw-${randomUUID()}`;
  await t.services.console.users.create(account.accountId, email, password, { actor: 'test', ip: null, host: 'test' });
  return { accountId: account.accountId, email, password, key: account.key, keyId: account.keyId };
}

/** The headers a browser sends with a same-origin form post. */
export function sameOrigin(t: TestApp): Record<string, string> {
  return { 'sec-fetch-site': 'same-origin', origin: t.baseUrl };
}

export async function signIn(t: TestApp, email: string, password: string, extra: Record<string, string> = {}) {
  const res = await fetch(`${t.baseUrl}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin(t), ...extra },
    body: new URLSearchParams({ email, password }),
  });
  const setCookie = res.headers.getSetCookie().find((c) => /^(__Host-)?console_session=/.test(c)) ?? null;
  return { status: res.status, res, setCookie, cookie: setCookie ? setCookie.split(';')[0]! : null, text: await res.text() };
}

/** GET a console page with a session cookie (no redirects followed). */
export function consoleGet(t: TestApp, path: string, cookie: string | null, headers: Record<string, string> = {}) {
  return fetch(`${t.baseUrl}${path}`, { redirect: 'manual', headers: { ...(cookie ? { cookie } : {}), ...headers } });
}

/** POST a console form with a session cookie. */
export function consolePost(t: TestApp, path: string, cookie: string | null, form: Record<string, string>, headers: Record<string, string> = sameOrigin(t)) {
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
    body: new URLSearchParams(form),
  });
}
