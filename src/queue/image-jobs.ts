import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import type { Config } from '../config.js';
import { MongoJobStore } from '../data/jobs.js';
import { loadOrCreateSigningSecret } from '../data/jobs-signing-secret.js';
import { ImageFiles } from '../domain/jobs/files.js';
import type { JobCredits } from '../domain/jobs/records.js';
import { ImageRunner } from '../domain/jobs/runner.js';
import { ImageJobs } from '../domain/jobs/service.js';
import { JobSettlement } from '../domain/jobs/settlement.js';
import { ImageUrlSigner } from '../domain/jobs/signed-urls.js';
import { JobSweeper } from '../domain/jobs/sweep.js';
import { silentLogger, type Logger } from '../domain/logger.js';
import type { DomainMetrics } from '../domain/metrics.js';
import { createImageProvider, type ImageProvider } from '../providers/images/index.js';
import { GridFsImageStore } from '../storage/gridfs.js';
import type { ImageStore } from '../storage/types.js';
import type { HostResolver } from '../domain/webhooks/ports.js';
import { ImageQueue } from './image-queue.js';
import { openWebhooks, type WebhooksModule } from './webhooks.js';

/** Everything image jobs need, built once per process from config and the database connection. */
export interface ImageJobsModule {
  service: ImageJobs;
  files: ImageFiles;
  runner: ImageRunner;
  sweeper: JobSweeper;
  queue: ImageQueue;
  signer: ImageUrlSigner;
  store: MongoJobStore;
  images: ImageStore;
  provider: ImageProvider;
  /** Webhooks ride on the same queue; a final job publishes its event through them. */
  webhooks: WebhooksModule;
  close(): Promise<void>;
}

export async function openImageJobs(deps: {
  config: Config;
  connection: Connection;
  credits: JobCredits;
  /** Defaults to the configured provider; tests pass their own. */
  provider?: ImageProvider;
  /** Names this process in the queue (e.g. `gateway`, `worker`). */
  role: string;
  /** Background errors of the queue and the runner's heartbeats (a database outage is summarized). */
  log?: Logger;
  /** Replaces DNS for webhook URLs (tests). */
  webhookResolver?: HostResolver;
  /** Told of jobs ending, images generated and delivery attempts. */
  metrics?: DomainMetrics;
}): Promise<ImageJobsModule> {
  const { config, connection, credits } = deps;
  const db = connection.db;
  if (!db) throw new Error('openImageJobs needs a connected database');
  const store = new MongoJobStore(connection);
  await store.init();
  const secret = config.URL_SIGNING_SECRET ?? (await loadOrCreateSigningSecret(connection));
  const signer = new ImageUrlSigner(secret, config.IMAGE_URL_TTL_SECONDS);
  const images = new GridFsImageStore(db);
  const provider = deps.provider ?? createImageProvider(config);
  const queue = await ImageQueue.open(db, {
    name: `${deps.role}@${hostname()}:${process.pid}`,
    pollIntervalMs: config.QUEUE_POLL_INTERVAL_MS,
    lockLifetimeMs: config.JOB_LOCK_LIFETIME_MS,
    concurrency: config.WORKER_CONCURRENCY,
    notifications: config.QUEUE_NOTIFICATIONS,
    log: deps.log,
    // readyState 1 = connected; the driver reports a lost server at once (broken sockets, heartbeats).
    databaseReachable: () => connection.readyState === 1,
  });
  const webhooks = await openWebhooks({ config, connection, imageQueue: queue, signer, log: deps.log ?? silentLogger, resolve: deps.webhookResolver, metrics: deps.metrics });
  const reconnected = () => queue.errors.recovered();
  connection.on('reconnected', reconnected);
  // One settlement for the three doors into a job's end (cancel, runs, sweep): a hook on jobs ending goes there.
  const settlement = new JobSettlement({
    jobs: store,
    credits,
    metrics: deps.metrics,
    // A publish that fails here is redone by the webhook sweep (the job keeps its eventPending flag).
    onEnded: (job) =>
      webhooks.publisher.publishJob(job.id).then(
        () => undefined,
        (err: unknown) => queue.errors.report(err, 'webhooks'),
      ),
  });
  const service = new ImageJobs({
    jobs: store,
    credits,
    settlement,
    queue,
    signer,
    limits: { maxPrompts: config.MAX_PROMPTS, maxPromptLength: config.MAX_PROMPT_LENGTH },
    publicBaseUrl: config.PUBLIC_BASE_URL,
    onBackgroundError: (err) => queue.errors.report(err, 'enqueue'),
  });
  const runner = new ImageRunner({
    jobs: store,
    credits,
    settlement,
    provider,
    images,
    lockLifetimeMs: config.JOB_LOCK_LIFETIME_MS,
    maxAttempts: config.IMAGE_MAX_ATTEMPTS,
    metrics: deps.metrics,
    // A missed heartbeat is harmless while the next one lands in time; in an outage they all fail.
    log: (msg, extra) => queue.errors.report(extra?.err ?? new Error(msg), 'heartbeat'),
  });
  const sweeper = new JobSweeper({ jobs: store, credits, queue, runner, lockLifetimeMs: config.JOB_LOCK_LIFETIME_MS });
  const files = new ImageFiles({ jobs: store, images, signer });
  return {
    service,
    files,
    runner,
    sweeper,
    queue,
    signer,
    store,
    images,
    provider,
    webhooks,
    close: async () => {
      connection.off('reconnected', reconnected);
      await queue.close();
    },
  };
}
