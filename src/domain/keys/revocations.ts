/** Why a key stopped working: deleted, or past its expiresAt (its own, or a roll's grace). */
export type RevocationReason = 'deleted' | 'expired';

/**
 * Revocation fan-out: every listener hears each deleted key once, whether the deletion was made here
 * (KeyManager) or reported by the change feed from another instance (KeyVerifier).
 */
export class Revocations {
  private readonly listeners = new Set<(keyId: string, reason: RevocationReason) => void>();
  /** Recently announced ids, so a local delete and its own change event announce once. */
  private readonly announced = new Set<string>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  onRevoked(listener: (keyId: string, reason: RevocationReason) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  announce(keyId: string, reason: RevocationReason = 'deleted'): void {
    if (this.announced.has(keyId)) return;
    this.announced.add(keyId);
    if (this.announced.size > 10_000) this.announced.delete(this.announced.values().next().value!);
    for (const listener of this.listeners) {
      try {
        listener(keyId, reason);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
