/** Persistence of API keys, implemented in src/data (MongoDB) and by test fakes. */
export interface KeyRecord {
  id: string;
  accountId: string;
  name: string;
  /** SHA-256 (hex) of the full key; the key itself is never stored. */
  hash: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  deletedAt: Date | null;
}

export interface KeyStore {
  insert(key: Omit<KeyRecord, 'id' | 'lastUsedAt' | 'deletedAt'>): Promise<KeyRecord>;
  /** The key with this hash, deleted or not. */
  findByHash(hash: string): Promise<KeyRecord | null>;
  findById(keyId: string): Promise<KeyRecord | null>;
  listForAccount(accountId: string): Promise<KeyRecord[]>;
  /** Sets deletedAt if the key is not deleted yet; returns the key after the change, null if unknown. */
  softDelete(keyId: string, at: Date): Promise<KeyRecord | null>;
  /** Raises lastUsedAt of each key to the given time (never lowers it: `$max`). */
  recordUse(uses: readonly { keyId: string; at: Date }[]): Promise<void>;
}

/**
 * Changes to stored keys as the database reports them to this process. A cache of keys is only
 * correct while `live` is true: then every update and delete of any key, by any instance, is reported.
 */
export interface KeyChangeFeed {
  readonly live: boolean;
  subscribe(listener: KeyChangeListener): () => void;
}

export interface KeyChangeListener {
  /** A key was updated or deleted (`deleted`: it now has deletedAt or is gone). */
  changed(keyId: string, deleted: boolean): void;
  /** The feed stopped being live (stream error or close): whatever was cached may be stale. */
  lost(): void;
}
