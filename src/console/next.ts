/**
 * The page to return to after signing in (`next`), carried from the sign-in form through the code
 * step. Only a path of this console is followed: anything else (another site, `//host`, a `..` or `.`
 * segment, a backslash, a malformed value) falls back, so `next` is never an open redirect. It is
 * judged as given and after every round of percent-decoding until it no longer changes: a browser
 * reads `%2e%2e` as `..`, and whatever sits between it and us may decode once more (`%252e`).
 */
const CONSOLE_PATH = /^\/console(\/[\w\-./?=&%]*)?$/;
const MAX_DECODINGS = 5;

export function safeNext(next: unknown, fallback = '/console'): string {
  if (typeof next !== 'string' || next.length > 2048 || !CONSOLE_PATH.test(next)) return fallback;
  let form = next;
  for (let round = 0; ; round++) {
    if (!staysInConsole(form)) return fallback;
    const decoded = decode(form);
    if (decoded === null || (decoded !== form && round === MAX_DECODINGS)) return fallback;
    if (decoded === form) return next;
    form = decoded;
  }
}

/** The path (before any `?`) is the console's, with no empty, `.` or `..` segment and no backslash. */
function staysInConsole(form: string): boolean {
  const path = form.split('?')[0]!;
  return /^\/console(\/|$)/.test(path) && !form.includes('//') && !path.includes('\\') && !/(^|\/)\.\.?(\/|$)/.test(path);
}

function decode(form: string): string | null {
  try {
    return decodeURIComponent(form);
  } catch {
    return null;
  }
}

/** `?next=…` for a page of the sign-in flow, or nothing when `next` is not one to follow. */
export function nextQuery(next: unknown): string {
  const safe = safeNext(next, '');
  return safe ? `?next=${encodeURIComponent(safe)}` : '';
}
