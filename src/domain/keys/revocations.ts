/**
 * Revocation fan-out: every listener hears each deleted key once, whether the deletion was made here
 * (KeyManager) or reported by the change feed from another instance (KeyVerifier).
 */
export class Revocations {
  private readonly listeners = new Set<(keyId: string) => void>();
  /** Recently announced ids, so a local delete and its own change event announce once. */
  private readonly announced = new Set<string>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  onRevoked(listener: (keyId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  announce(keyId: string): void {
    if (this.announced.has(keyId)) return;
    this.announced.add(keyId);
    if (this.announced.size > 10_000) this.announced.delete(this.announced.values().next().value!);
    for (const listener of this.listeners) {
      try {
        listener(keyId);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
