import { AppError } from '../errors.js';
import type { KeyAuthenticator } from '../ports.js';
import type { KeyPrincipal } from '../principal.js';
import type { LastUsedRecorder } from './last-used.js';
import type { RateLimiter } from './rate-limit.js';
import type { Revocations } from './revocations.js';
import type { KeyVerifier } from './verifier.js';

/**
 * What an API door asks of keys for every request: verify the key (the contract's 401s), count it
 * against the per-key rate limit (429), note its use (lastUsedAt, coalesced).
 */
export class ApiKeyAuthenticator implements KeyAuthenticator {
  constructor(
    private readonly deps: { verifier: KeyVerifier; limiter: RateLimiter; lastUsed: LastUsedRecorder; revocations: Revocations },
  ) {}

  async authenticate(authorization: string | undefined): Promise<KeyPrincipal> {
    const result = await this.deps.verifier.verify(authorization);
    if (!result.ok) throw new AppError(result.reason);
    await this.admit(result.principal.keyId);
    return result.principal;
  }

  async admit(keyId: string): Promise<void> {
    this.deps.limiter.take(keyId);
    this.deps.lastUsed.note(keyId);
  }

  isActive(keyId: string): Promise<boolean> {
    return this.deps.verifier.isActive(keyId);
  }

  onRevoked(listener: (keyId: string) => void): () => void {
    return this.deps.revocations.onRevoked(listener);
  }
}
