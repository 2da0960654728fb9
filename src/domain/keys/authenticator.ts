import { AppError } from '../errors.js';
import type { KeyAdmission, KeyAuthenticator } from '../ports.js';
import type { KeyGrant, KeyPrincipal, Principal } from '../principal.js';
import type { GrantChanges } from './grant-changes.js';
import type { LastUsedRecorder } from './last-used.js';
import { rateLimitedError, type RateLimitOutcome, type RateLimiter } from './rate-limit.js';
import type { RevocationReason, Revocations } from './revocations.js';
import type { KeyVerifier } from './verifier.js';

/**
 * What an API door asks of keys for every request: verify the key (the contract's 401s), count it
 * against the per-key rate limit shared by every instance (429), note its use (lastUsedAt, coalesced).
 */
export class ApiKeyAuthenticator implements KeyAuthenticator {
  constructor(
    private readonly deps: { verifier: KeyVerifier; limiter: RateLimiter; lastUsed: LastUsedRecorder; revocations: Revocations; grants: GrantChanges },
  ) {}

  async authenticateWithLimit(authorization: string | undefined, cost = 1): Promise<KeyAdmission> {
    const result = await this.deps.verifier.verify(authorization);
    if (!result.ok) throw new AppError(result.reason);
    return { principal: result.principal, rateLimit: await this.count(result.principal.keyId, cost, result.principal) };
  }

  async authenticate(authorization: string | undefined): Promise<KeyPrincipal> {
    const { principal, rateLimit } = await this.authenticateWithLimit(authorization);
    if (rateLimit && !rateLimit.ok) throw rateLimitedError(rateLimit);
    return principal;
  }

  admit(keyId: string, cost = 1, key?: Pick<Principal, 'rateLimitPerMinute'>): Promise<RateLimitOutcome | null> {
    return this.count(keyId, cost, key);
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
   * The rate limit's verdict under the key's own limit or the server's (null: none applies, and no
   * database work); notes an admitted use.
   */
  private async count(keyId: string, cost: number, key?: Pick<Principal, 'rateLimitPerMinute'>) {
    const limit = this.deps.limiter.limitFor(key?.rateLimitPerMinute);
    const rateLimit = limit > 0 ? await this.deps.limiter.take(keyId, cost, limit) : null;
    if (!rateLimit || rateLimit.ok) this.deps.lastUsed.note(keyId);
    return rateLimit;
  }
}
