import type { KeyGrant } from '../principal.js';

/**
 * Grant fan-out: after a change of a key's settings, made here (KeyManager) or reported by the change
 * feed from another instance (KeyVerifier), every listener hears the key's grant as it now stands, so
 * what was admitted under the old one (an open subscription) can be held to the new one. A key may be
 * announced more than once for one change (the local edit and its own change event): listeners compare,
 * they do not count.
 */
export class GrantChanges {
  private readonly listeners = new Set<(keyId: string, grant: KeyGrant) => void>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  onChanged(listener: (keyId: string, grant: KeyGrant) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  announce(keyId: string, grant: KeyGrant): void {
    for (const listener of this.listeners) {
      try {
        listener(keyId, grant);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
