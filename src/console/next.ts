/**
 * The page to return to after signing in (`next`), carried from the sign-in form through the code
 * step. Only a path of this console is followed: anything else (another site, `//host`, a `..`
 * segment, a malformed value) falls back, so `next` is never an open redirect.
 */
const CONSOLE_PATH = /^\/console(\/[\w\-./?=&%]*)?$/;

export function safeNext(next: unknown, fallback = '/console'): string {
  if (typeof next !== 'string' || next.length > 2048 || !CONSOLE_PATH.test(next)) return fallback;
  const path = next.split('?')[0]!;
  return next.includes('//') || /(^|\/)\.\.?(\/|$)/.test(path) ? fallback : next;
}

/** `?next=…` for a page of the sign-in flow, or nothing when `next` is not one to follow. */
export function nextQuery(next: unknown): string {
  const safe = safeNext(next, '');
  return safe ? `?next=${encodeURIComponent(safe)}` : '';
}
