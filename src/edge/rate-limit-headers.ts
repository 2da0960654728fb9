/**
 * The rate limit as HTTP headers (draft-ietf-httpapi-ratelimit-headers-11): `RateLimit-Policy` names
 * the quota (`q` units per `w` seconds) and `RateLimit` the state of this key's window (`r` units left,
 * reset in `t` seconds), both Structured Field lists of one item named after the policy. A refusal's
 * `Retry-After` comes with its AppError (rateLimitedError).
 */
import { RATE_LIMIT_WINDOW_MS, type RateLimitOutcome } from '../domain/keys/rate-limit.js';

const POLICY = '"default"';

export function rateLimitHeaders(outcome: RateLimitOutcome): Record<string, string> {
  return {
    'ratelimit-policy': `${POLICY};q=${outcome.limit};w=${RATE_LIMIT_WINDOW_MS / 1000}`,
    ratelimit: `${POLICY};r=${outcome.remaining};t=${outcome.resetSeconds}`,
  };
}
