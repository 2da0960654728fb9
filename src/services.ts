/**
 * Composition root: builds every domain service once from config + deps. REST routes, GraphQL resolvers
 * and workers all receive this one `Services` object, so they share the same rules and the same caches.
 *
 * How to plug in (other modules):
 *  - Add your service to the `Services` interface and build it in `buildServices` at the marked place
 *    (`IMAGE JOBS`, `JOB EVENTS`); close it in `close()` (reverse order of construction).
 *  - Use `credits` (CreditService: charge / refund / voidOp, all idempotent by op id) and `keys`
 *    (KeyAuthenticator) from here; never build a second instance (the key cache and the lastUsedAt
 *    coalescing live in the KeyService instance).
 *  - The mongoose connection is `services.connection`; src/data/collection-watcher.ts watches a
 *    collection (change stream or polling) for cross-process events.
 */
import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import type { Config } from './config.js';
import { MongoAccountStore } from './data/accounts.js';
import { MongoAuditStore } from './data/audit.js';
import { MongoDefinitionCacheStore } from './data/definition-cache.js';
import { MongoKeyChangeFeed } from './data/key-changes.js';
import { MongoKeyStore } from './data/keys.js';
import { AuditLog } from './domain/audit/service.js';
import { CreditService } from './domain/credits/service.js';
import { LayeredDefinitionCache } from './domain/definitions/cache.js';
import { DefinitionLookup } from './domain/definitions/service.js';
import type { DefinitionProvider } from './domain/definitions/types.js';
import { KeyService } from './domain/keys/service.js';
import { silentLogger, type Logger } from './domain/logger.js';
import type { CreditBalances } from './domain/ports.js';
import { createDefinitionProvider } from './providers/definitions/index.js';
import type { ImageProvider } from './providers/images/types.js';
import { openImageJobs, type ImageJobsModule } from './queue/image-jobs.js';
import { MongoJobEvents, type JobEvents } from './queue/job-events.js';
import type { ImageJobService } from './domain/ports.js';
import type { ImageFiles } from './domain/jobs/files.js';

export interface Services {
  readonly config: Config;
  readonly connection: Connection;
  /** Accounts and balances: charge / refund / grant / voidOp, idempotent by operation id. */
  readonly credits: CreditService;
  /** Batched balances (GraphQL DataLoader); the same object as `credits`. */
  readonly balances: CreditBalances;
  /** API keys: authenticate (KeyAuthenticator), create, list, delete. */
  readonly keys: KeyService;
  readonly definitions: DefinitionLookup;
  readonly audit: AuditLog;
  /** Key change feed state: 'changestream' (keys cached) or 'poll' (no key cache). */
  readonly keyFeedState: () => 'changestream' | 'poll' | 'stopped';
  /** Image jobs: create, get, list (REST and GraphQL). */
  readonly jobs: ImageJobService;
  /** Stored images behind signed URLs. */
  readonly imageFiles: ImageFiles;
  /** The image-jobs module: queue, runner and sweep, for starting a worker (main.ts, workers/main.ts). */
  readonly imageJobs: ImageJobsModule;
  /** Cross-process job changes for GraphQL `jobStatus`: one watcher per process, started on first subscription. */
  readonly jobEvents: JobEvents;
  /** Stops background work (change feeds, lastUsedAt flush). Does not close the connection (the caller owns it). */
  close(): Promise<void>;
}

export interface ServiceDeps {
  connection: Connection;
  logger?: Logger;
  /** Replaces the configured definition provider (tests). */
  definitionProvider?: DefinitionProvider;
  /** How keys hear of changes: change streams where available (default) or polling only. */
  keyChanges?: 'auto' | 'changestream' | 'poll';
  /** Host name recorded in audit entries; default os.hostname(). */
  host?: string;
  /** Replaces the configured image provider (tests, benchmarks). */
  imageProvider?: ImageProvider;
  /** Names this process in the work queue; default `gateway`. */
  role?: string;
}

export async function buildServices(config: Config, deps: ServiceDeps): Promise<Services> {
  const { connection } = deps;
  const log = deps.logger ?? silentLogger;
  const host = deps.host ?? hostname();
  if (!connection.db) throw new Error('buildServices needs an open connection');

  const accountStore = new MongoAccountStore(connection);
  const keyStore = new MongoKeyStore(connection);
  const auditStore = new MongoAuditStore(connection);
  const cacheStore = new MongoDefinitionCacheStore(connection);
  await Promise.all([accountStore.init(), keyStore.init(), auditStore.init(), cacheStore.init()]);

  const keyFeed = new MongoKeyChangeFeed(connection.db, { mode: deps.keyChanges ?? 'auto', log });
  await keyFeed.start();

  const credits = new CreditService({ accounts: accountStore, audit: auditStore, host });
  const keys = new KeyService({
    keys: keyStore,
    accounts: accountStore,
    audit: auditStore,
    changes: keyFeed,
    rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
    onBackgroundError: (err) => log.warn({ err }, 'keys: background write failed'),
  });
  const provider = deps.definitionProvider ?? (await createDefinitionProvider(config));
  const definitions = new DefinitionLookup({
    credits,
    provider,
    cache: new LayeredDefinitionCache({ ttlMs: config.DEFINITION_CACHE_TTL_SECONDS * 1000, maxEntries: 10_000, store: cacheStore }),
    maxKeywordLength: config.MAX_KEYWORD_LENGTH,
    onCacheError: (err) => log.warn({ err }, 'definitions: cache failed'),
  });
  const audit = new AuditLog({ store: auditStore, accounts: accountStore });

  const imageJobs = await openImageJobs({ config, connection, credits, provider: deps.imageProvider, role: deps.role ?? 'gateway' });
  // Started lazily by the first subscriber: workers and the CLI build services too and never watch.
  const jobEvents = new MongoJobEvents({ db: connection.db, mode: config.JOB_EVENTS, pollMs: config.JOB_EVENTS_POLL_MS, log });

  return {
    config,
    connection,
    credits,
    balances: credits,
    keys,
    definitions,
    audit,
    keyFeedState: () => keyFeed.state,
    jobs: imageJobs.service,
    imageFiles: imageJobs.files,
    imageJobs,
    jobEvents,
    async close() {
      // IMAGE JOBS / JOB EVENTS: close them here, before the key feed.
      await jobEvents.close();
      await imageJobs.close();
      await keys.close();
      await keyFeed.close();
      await closeProvider(provider);
    },
  };
}

/** What the admin CLI needs: accounts, credits, keys and the audit trail; no feeds, no providers. */
export interface AdminServices {
  readonly credits: CreditService;
  readonly keys: KeyService;
  readonly audit: AuditLog;
  close(): Promise<void>;
}

export async function buildAdminServices(deps: { connection: Connection; host?: string }): Promise<AdminServices> {
  const { connection } = deps;
  const accountStore = new MongoAccountStore(connection);
  const keyStore = new MongoKeyStore(connection);
  const auditStore = new MongoAuditStore(connection);
  await Promise.all([accountStore.init(), keyStore.init(), auditStore.init()]);
  const credits = new CreditService({ accounts: accountStore, audit: auditStore, host: deps.host ?? hostname() });
  // No change feed: a short-lived process caches nothing; gateways hear of its deletions through theirs.
  const keys = new KeyService({ keys: keyStore, accounts: accountStore, audit: auditStore });
  return { credits, keys, audit: new AuditLog({ store: auditStore, accounts: accountStore }), close: () => keys.close() };
}

async function closeProvider(provider: DefinitionProvider): Promise<void> {
  const closable = provider as DefinitionProvider & { close?: () => Promise<void> };
  await closable.close?.();
}
