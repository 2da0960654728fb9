/**
 * Composition root of a standalone worker process: only what running image jobs needs. A worker
 * refunds failed images (credits, with their audit entries), claims and completes images (job store,
 * image store, provider), delivers webhooks and runs the queue and its sweeps. It serves no requests, so it builds no keys
 * or key change feed, no definitions, no job events for subscriptions.
 */
import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import type { Config } from '../src/config.js';
import { MongoAccountStore } from '../src/data/accounts.js';
import { MongoAuditStore } from '../src/data/audit.js';
import { CreditService } from '../src/domain/credits/service.js';
import { silentLogger, type Logger } from '../src/domain/logger.js';
import type { DomainMetrics } from '../src/domain/metrics.js';
import type { LowCreditsAlerts } from '../src/domain/webhooks/low-credits.js';
import type { HostResolver } from '../src/domain/webhooks/ports.js';
import type { ImageProvider } from '../src/providers/images/types.js';
import { openImageJobs, type ImageJobsModule } from '../src/queue/image-jobs.js';

export interface WorkerServices {
  /** The queue, runner and sweep a worker runs (startConfiguredImageWorker). */
  readonly imageJobs: ImageJobsModule;
  /** Stops the queue's background work. Does not close the connection (the caller owns it). */
  close(): Promise<void>;
}

export interface WorkerServiceDeps {
  connection: Connection;
  logger?: Logger;
  /** Replaces the configured image provider (tests). */
  imageProvider?: ImageProvider;
  /** Host name recorded in refund audit entries; default os.hostname(). */
  host?: string;
  /** Replaces DNS for webhook URLs (tests). */
  webhookResolver?: HostResolver;
  /** Told where the domain decides (refunds, jobs, images, deliveries); default: nothing counted. */
  metrics?: DomainMetrics;
}

export async function buildWorkerServices(config: Config, deps: WorkerServiceDeps): Promise<WorkerServices> {
  const { connection } = deps;
  const log = deps.logger ?? silentLogger;
  const accountStore = new MongoAccountStore(connection);
  const auditStore = new MongoAuditStore(connection);
  await Promise.all([accountStore.init(), auditStore.init()]);
  // Bound once the webhooks exist (they ride on the image queue, which needs the credits first).
  const late: { alerts?: LowCreditsAlerts } = {};
  const credits = new CreditService({
    accounts: accountStore,
    audit: auditStore,
    host: deps.host ?? hostname(),
    metrics: deps.metrics,
    onBalanceChanged: async (accountId, balance, state) => late.alerts?.observe(accountId, balance, state),
  });
  const imageJobs = await openImageJobs({ config, connection, credits, provider: deps.imageProvider, role: 'worker', log, webhookResolver: deps.webhookResolver, metrics: deps.metrics });
  late.alerts = imageJobs.webhooks.alerts;
  return {
    imageJobs,
    close: () => imageJobs.close(),
  };
}
