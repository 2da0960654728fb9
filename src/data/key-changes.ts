import type { Db } from 'mongodb';
import type { KeyChangeFeed, KeyChangeListener } from '../domain/keys/records.js';
import { CollectionWatcher, type WatchMode, type WatcherLogger } from './collection-watcher.js';
import type { ApiKeyDoc } from './models/api-key.js';
import { apiKeyCollectionName } from './models/api-key.js';

/**
 * Key changes from every instance, through a CollectionWatcher on `api_keys`. `live` (a change stream
 * is open) is what allows KeyService to cache keys; while polling, deletions still reach onRevoked
 * listeners (by updatedAt), but nothing is cached.
 */
export class MongoKeyChangeFeed implements KeyChangeFeed {
  private readonly listeners = new Set<KeyChangeListener>();
  private readonly watcher: CollectionWatcher<ApiKeyDoc>;

  constructor(db: Db, opts: { mode?: WatchMode; pollMs?: number; log?: WatcherLogger } = {}) {
    this.watcher = new CollectionWatcher<ApiKeyDoc>({
      db,
      collection: apiKeyCollectionName,
      operationTypes: ['update', 'replace', 'delete'],
      fullDocument: true,
      // Settings changes and revocations move updatedAt; a charge's reservation, its confirmation, a
      // refund, a lastUsedAt write do not, and on a capped key they come with every request: filtered
      // out in the stream, they cost no gateway a round trip or a document read.
      updatesSetting: ['updatedAt'],
      mode: opts.mode ?? 'auto',
      pollMs: opts.pollMs ?? 1000,
      log: opts.log,
      onEvent: (event) => {
        const keyId = String(event.documentKey._id);
        const deleted = event.operationType === 'delete' || !event.fullDocument || event.fullDocument.deletedAt != null;
        // Updates that do not move updatedAt never arrive (see updatesSetting); polling reads by updatedAt.
        const version = event.fullDocument?.updatedAt?.getTime();
        for (const l of this.listeners) l.changed(keyId, deleted, version);
      },
      // Any switch (stream lost, stream back) invalidates what was cached under the previous regime.
      onStateChange: () => {
        for (const l of this.listeners) l.lost();
      },
    });
  }

  get live(): boolean {
    return this.watcher.live;
  }

  get state() {
    return this.watcher.state;
  }

  start(): Promise<void> {
    return this.watcher.start();
  }

  close(): Promise<void> {
    return this.watcher.close();
  }

  subscribe(listener: KeyChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
