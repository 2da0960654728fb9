import type { AuditStore } from '../audit/types.js';
import type { AccountStore, KeyCreditsOnAccount } from '../credits/records.js';
import { ApiKeyAuthenticator } from './authenticator.js';
import { GrantChanges } from './grant-changes.js';
import { LastUsedRecorder } from './last-used.js';
import { KeyManager } from './manager.js';
import { RateLimiter, type RateLimitCounter } from './rate-limit.js';
import type { KeyChangeFeed, KeyStore } from './records.js';
import { Revocations } from './revocations.js';
import { KeyVerifier } from './verifier.js';

export interface KeyServicesDeps {
  keys: KeyStore;
  accounts: Pick<AccountStore, 'find'> & Partial<Pick<KeyCreditsOnAccount, 'heldOf' | 'recall'>>;
  audit: AuditStore;
  /** Reports key changes from every instance; keys are cached only while it is live. */
  changes?: KeyChangeFeed;
  now?: () => Date;
  lastUsedIntervalMs?: number;
  cacheSize?: number;
  /** Units per minute per key, shared by every instance through `rateLimits`; 0 or unset: unlimited. */
  rateLimitPerMinute?: number;
  /** The shared count (needed when rateLimitPerMinute > 0). */
  rateLimits?: RateLimitCounter;
  /** The rate limit's clock (ms), for tests; default Date.now. */
  rateLimitNow?: () => number;
  /** Told of every request the rate limit refuses (rate_limited_requests_total). */
  onRateLimited?: () => void;
  onBackgroundError?: (err: unknown) => void;
}

/**
 * The key services of one process, each with one job, wired so a local delete revokes at once and a
 * local edit announces the key's new grant at once.
 */
export interface KeyServices {
  /** Create, list, delete (console and CLI). */
  readonly manager: KeyManager;
  /** Every API request: verify, rate limit, note the use (REST and GraphQL). */
  readonly authenticator: ApiKeyAuthenticator;
  /** The per-key rate limit, for doors that count more than one unit per request (GraphQL fields). */
  readonly limiter: RateLimiter;
  readonly verifier: KeyVerifier;
  readonly lastUsed: LastUsedRecorder;
  /** Writes pending lastUsedAt values, stops listening to the feed. */
  close(): Promise<void>;
}

export function createKeyServices(deps: KeyServicesDeps): KeyServices {
  const revocations = new Revocations(deps.onBackgroundError);
  const grants = new GrantChanges(deps.onBackgroundError);
  const verifier = new KeyVerifier({ keys: deps.keys, revocations, grants, changes: deps.changes, cacheSize: deps.cacheSize, now: deps.now, onError: deps.onBackgroundError });
  const lastUsed = new LastUsedRecorder({ keys: deps.keys, intervalMs: deps.lastUsedIntervalMs, now: deps.now, onError: deps.onBackgroundError });
  const manager = new KeyManager({
    keys: deps.keys,
    accounts: deps.accounts,
    held: deps.accounts.heldOf && deps.accounts.recall ? (deps.accounts as Pick<KeyCreditsOnAccount, 'heldOf' | 'recall'>) : undefined,
    audit: deps.audit,
    now: deps.now,
    onDeleted: (keyId) => {
      verifier.forget(keyId);
      revocations.announce(keyId, 'deleted');
    },
    onChanged: (keyId) => verifier.refresh(keyId),
  });
  const perMinute = deps.rateLimitPerMinute ?? 0;
  if (perMinute > 0 && !deps.rateLimits) throw new Error('a rate limit needs its shared counter (rateLimits)');
  const limiter = new RateLimiter({ counter: deps.rateLimits ?? noCounter, perMinute, now: deps.rateLimitNow, onRefused: deps.onRateLimited });
  const authenticator = new ApiKeyAuthenticator({ verifier, limiter, lastUsed, revocations, grants });
  return {
    manager,
    authenticator,
    limiter,
    verifier,
    lastUsed,
    async close() {
      verifier.close();
      await lastUsed.close();
    },
  };
}

/** Never called: a limiter without a limit does no counting. */
const noCounter: RateLimitCounter = {
  add: () => Promise.reject(new Error('rate limit counter called with no limit configured')),
};

export type { CreatedKey, KeySummary, RolledKey } from './manager.js';
export { KeyManager } from './manager.js';
