import { setTimeout as sleep } from 'node:timers/promises';

/**
 * What the OpenAI-compatible providers (images, definitions) share: one JSON POST per attempt with its
 * own timeout, and bounded retries with exponential, jittered backoff that honours Retry-After. Each
 * provider keeps its own error vocabulary; this module only needs to know whether a failure may be
 * retried and how long the server asked to wait.
 */

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  /** First backoff delay; doubles per retry, with jitter. */
  backoffBaseMs: number;
  /** Upper bound of one delay, a server's Retry-After included. */
  backoffMaxMs: number;
}

/** A failure as the retry loop sees it. */
export interface RetryableFailure {
  retryable?: boolean;
  retryAfterMs?: number;
}

export interface HttpReply {
  ok: boolean;
  status: number;
  text: string;
  /** Retry-After in milliseconds (seconds form only), when the server sent one. */
  retryAfterMs: number | undefined;
}

/** `{baseUrl}/{path}`, whatever trailing slashes the configured base URL has. */
export function endpointUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path}`;
}

/** POSTs `body` as JSON with a Bearer key; the attempt ends at `timeoutMs` or when `signal` aborts. */
export async function postJson(url: string, body: unknown, opts: { apiKey?: string; timeoutMs: number; signal?: AbortSignal }): Promise<HttpReply> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  const res = await fetch(url, {
    method: 'POST',
    headers,
    signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout,
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const seconds = Number(res.headers.get('retry-after') ?? NaN);
  return { ok: res.ok, status: res.status, text, retryAfterMs: Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined };
}

/** Whether a thrown fetch error is a timeout (ours) rather than a refused or broken connection. */
export function isTimeout(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

/**
 * Runs `attempt` until it succeeds, fails for good, or the retries are spent. `classify` turns whatever
 * an attempt threw into the error to report (with its retry verdict); `aborted` is thrown when `signal`
 * ends a wait between attempts.
 */
export async function withRetries<T, E extends Error & RetryableFailure>(
  attempt: () => Promise<T>,
  classify: (err: unknown) => E,
  policy: RetryPolicy,
  signal: AbortSignal | undefined,
  aborted: () => Error,
): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      const failure = classify(err);
      if (!failure.retryable || n >= policy.retries) throw failure;
      await sleep(backoffDelay(n, policy, failure.retryAfterMs), undefined, { signal }).catch(() => {
        throw aborted();
      });
    }
  }
}

/** Delay before retry `n + 1`: base·2ⁿ with jitter over its upper half, at least Retry-After, at most the cap. */
export function backoffDelay(n: number, policy: RetryPolicy, retryAfterMs = 0): number {
  const exp = policy.backoffBaseMs * 2 ** n;
  return Math.min(policy.backoffMaxMs, Math.max(exp / 2 + Math.random() * (exp / 2), retryAfterMs));
}

/** The `error.message` of an OpenAI-style error body, shortened; upstream bodies can be large HTML pages. */
export function upstreamMessage(body: string): string {
  try {
    const msg = (JSON.parse(body) as { error?: { message?: unknown } })?.error?.message;
    if (typeof msg === 'string') return msg.slice(0, 200);
  } catch {
    // not JSON: no message
  }
  return '';
}
