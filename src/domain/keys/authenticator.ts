import { AppError } from '../errors.js';
import type { KeyAdmission, KeyAuthenticator } from '../ports.js';
import type { KeyGrant, KeyPrincipal, Principal } from '../principal.js';
import type { GrantChanges } from './grant-changes.js';
import type { LastUsedRecorder } from './last-used.js';
import { rateLimitedError, type RateLimitOutcome, type RateLimiter } from './rate-limit.js';
import type { RevocationReason, Revocations } from './revocations.js';
import type { KeyVerifier, VerifyResult } from './verifier.js';

/**
 * What an API door asks of keys for every request: verify the key (the contract's 401s), count it
 * against the per-key rate limit shared by every instance (429), note its use (lastUsedAt, coalesced).
 */
export class ApiKeyAuthenticator implements KeyAuthenticator {
  constructor(
    private readonly deps: { verifier: KeyVerifier; limiter: RateLimiter; lastUsed: LastUsedRecorder; revocations: Revocations; grants: GrantChanges },
  ) {}

  authenticateWithLimit(authorization: string | undefined, cost = 1): Promise<KeyAdmission> {
    // Every request's path: no async frame while memory answers (a cached key, no shared rate limit).
    try {
      const result = this.deps.verifier.verify(authorization);
      return result instanceof Promise ? result.then((r) => this.admitted(r, cost)) : this.admitted(result, cost);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private admitted(result: VerifyResult, cost: number): Promise<KeyAdmission> {
    if (!result.ok) return Promise.reject(new AppError(result.reason));
    const { principal } = result;
    const counted = this.count(principal.keyId, cost, principal);
    // No rate limit (the usual case): an admission already settled, with no step in between.
    if (counted === null) return Promise.resolve({ principal, rateLimit: null });
    return counted.then((rateLimit) => ({ principal, rateLimit }));
  }

  async authenticate(authorization: string | undefined): Promise<KeyPrincipal> {
    const { principal, rateLimit } = await this.authenticateWithLimit(authorization);
    if (rateLimit && !rateLimit.ok) throw rateLimitedError(rateLimit);
    return principal;
  }

  admit(keyId: string, cost = 1, key?: Pick<Principal, 'rateLimitPerMinute'>): Promise<RateLimitOutcome | null> {
    return this.count(keyId, cost, key) ?? Promise.resolve(null);
  }

  isActive(keyId: string): Promise<boolean> {
    return this.deps.verifier.isActive(keyId);
  }

  onRevoked(listener: (keyId: string, reason: RevocationReason) => void): () => void {
    return this.deps.revocations.onRevoked(listener);
  }

  onGrantChanged(listener: (keyId: string, grant: KeyGrant) => void): () => void {
    return this.deps.grants.onChanged(listener);
  }

  /**
   * The rate limit's verdict under the key's own limit or the server's, or null at once when none
   * applies (no database work); notes an admitted use.
   */
  private count(keyId: string, cost: number, key?: Pick<Principal, 'rateLimitPerMinute'>): Promise<RateLimitOutcome> | null {
    const limit = this.deps.limiter.limitFor(key?.rateLimitPerMinute);
    if (limit <= 0) {
      this.deps.lastUsed.note(keyId);
      return null;
    }
    return this.deps.limiter.take(keyId, cost, limit).then((rateLimit) => {
      if (rateLimit.ok) this.deps.lastUsed.note(keyId);
      return rateLimit;
    });
  }
}
