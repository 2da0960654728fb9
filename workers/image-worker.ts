import type { Job } from 'agenda';
import { imageRetention, type Config } from '../src/config.js';
import type { ImageRunner } from '../src/domain/jobs/runner.js';
import type { JobSweeper } from '../src/domain/jobs/sweep.js';
import type { ImageRetention } from '../src/domain/jobs/retention.js';
import type { KeySweeper } from '../src/domain/keys/sweep.js';
import { UnreachableCaseError } from '../src/domain/errors.js';
import { inSpan } from '../src/tracing/context.js';
import { GENERATE_IMAGE, SWEEP_IMAGES, SWEEP_JOBS, generateImagePayload, type ImageQueue } from '../src/queue/image-queue.js';
import { defineWebhookHandlers, scheduleWebhookSweep, type WebhookHandlerDeps } from './webhook-worker.js';
import { defineBillingHandlers, scheduleBillingSweep } from './billing-worker.js';
import type { BillingWork } from './services.js';

export interface ImageWorkerOptions {
  queue: ImageQueue;
  runner: ImageRunner;
  sweeper: JobSweeper;
  /** Swept with the jobs: keys' credit reservations and `key.expiring`. */
  keys?: Pick<KeySweeper, 'sweep'>;
  concurrency: number;
  lockLifetimeMs: number;
  sweepIntervalMs: number;
  /** Deletes expired images every `retentionSweepMs` (IMAGE_SWEEP_INTERVAL). */
  retention?: Pick<ImageRetention, 'sweep'>;
  retentionSweepMs?: number;
  log: Logger;
  /** Also run automatic recharges and the billing sweep (their entries share the queue). */
  billing?: Pick<BillingWork, 'autoRecharge' | 'fulfilment'>;
  /** Also deliver webhooks (their entries share the queue) and run their sweep. */
  webhooks?: WebhookHandlerDeps;
}

/** What a process running images hands the worker door (workers/services.ts builds it, for the gateway too). */
export interface ImageWorkKit {
  queue: ImageQueue;
  runner: ImageRunner;
  sweeper: JobSweeper;
  keys?: Pick<KeySweeper, 'sweep'>;
  retention?: Pick<ImageRetention, 'sweep'>;
  webhooks: WebhookHandlerDeps;
}

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** Thrown to have the queue run an image again later, with backoff; carries its reason by code. */
export class RetryLater extends Error {
  override readonly name = 'RetryLater';
  readonly code = 'retry_later';
  readonly retryable = true;
}

const RETRY_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000];

export interface RunningWorker {
  /** Stops taking work and waits for running images to finish (SIGTERM). */
  stop(timeoutMs?: number): Promise<void>;
}

/** A worker on the image jobs module, tuned by the configuration (gateway in-process and standalone alike). */
export function startConfiguredImageWorker(
  config: Config,
  imageJobs: ImageWorkKit,
  log: Logger,
  billing?: Pick<BillingWork, 'autoRecharge' | 'fulfilment'>,
): Promise<RunningWorker> {
  return startImageWorker({
    billing,
    queue: imageJobs.queue,
    runner: imageJobs.runner,
    sweeper: imageJobs.sweeper,
    keys: imageJobs.keys,
    concurrency: config.WORKER_CONCURRENCY,
    lockLifetimeMs: config.JOB_LOCK_LIFETIME_MS,
    sweepIntervalMs: config.JOB_SWEEP_INTERVAL_MS,
    retention: imageJobs.retention,
    retentionSweepMs: imageRetention(config).sweepMs,
    log,
    webhooks: imageJobs.webhooks,
  });
}

/**
 * The worker door: parses a queue entry, asks the runner to do the work, and maps the outcome back to
 * the queue (retry with backoff, look again later, or done). No business rule lives here.
 */
export async function startImageWorker(opts: ImageWorkerOptions): Promise<RunningWorker> {
  const { queue, runner, sweeper, log } = opts;
  const { agenda, channel } = queue;

  agenda.define(
    GENERATE_IMAGE,
    async (job: Job<unknown>) => {
      const parsed = generateImagePayload.safeParse(job.attrs.data);
      if (!parsed.success) {
        log.error({ entry: String(job.attrs._id), data: job.attrs.data }, 'dropping malformed image queue entry');
        return;
      }
      const { jobId, index, traceparent } = parsed.data;
      // One span per image, in the trace of the request that created the job.
      await inSpan('image.generate', traceparent, { 'job.id': jobId, 'image.index': index }, async () => {
        const outcome = await runner.run(jobId, index, {
          lockedAt: job.attrs.lockedAt ?? undefined,
          // Agenda gives up on a run whose lock it saw expire (an outage): touch() would only throw then.
          // The image's own heartbeat still guards it; the entry is retaken after its lock expires.
          renew: async () => {
            if (!job.getCanceledMessage()) await job.touch();
          },
        });
        switch (outcome.kind) {
          case 'succeeded':
          case 'skipped':
            return;
          case 'failed':
            log.info({ jobId, index, error: outcome.error }, 'image failed and was refunded');
            return;
          case 'retry':
            throw new RetryLater(outcome.error);
          case 'busy':
            await queue.enqueueAt(jobId, index, outcome.retryAt);
            return;
          default:
            throw new UnreachableCaseError(outcome);
        }
      });
    },
    {
      concurrency: opts.concurrency,
      // Lock no more than we can run: the rest of a backlog stays available to other workers.
      lockLimit: opts.concurrency,
      lockLifetime: opts.lockLifetimeMs,
      removeOnComplete: true,
      // Retryable provider failures and infrastructure faults. Attempts per image are bounded by the
      // runner (IMAGE_MAX_ATTEMPTS); past this schedule the sweep requeues the image.
      backoff: (ctx) => RETRY_DELAYS_MS[ctx.attempt - 1] ?? null,
    },
  );

  agenda.define(
    SWEEP_JOBS,
    async () => {
      const report = await sweeper.sweep();
      if (Object.values(report).some((n) => n > 0)) log.info({ report }, 'image job sweep repaired jobs');
      const keys = await opts.keys?.sweep();
      if (keys && Object.values(keys).some((n) => n > 0)) log.info({ report: keys }, 'key sweep settled reservations or announced expiries');
    },
    { concurrency: 1, lockLifetime: Math.max(opts.lockLifetimeMs, 60_000) },
  );

  const retention = opts.retention;
  if (retention) {
    agenda.define(
      SWEEP_IMAGES,
      async () => {
        const report = await retention.sweep();
        if (report.deleted > 0) log.info({ report }, 'image retention deleted expired images');
      },
      { concurrency: 1, lockLifetime: Math.max(opts.lockLifetimeMs, 60_000) },
    );
  }

  if (opts.billing) defineBillingHandlers(agenda, opts.billing, log);
  if (opts.webhooks) defineWebhookHandlers(agenda, opts.webhooks, { concurrency: opts.concurrency, log });

  // A finished run frees a lock slot: take the next waiting entry now rather than at the next poll.
  agenda.on(`complete:${GENERATE_IMAGE}`, () => channel.kick(GENERATE_IMAGE));

  await agenda.start();
  // One recurring entry shared by all workers (Agenda keeps a single document per `every` name).
  await agenda.every(opts.sweepIntervalMs, SWEEP_JOBS, undefined, { skipImmediate: true });
  if (retention) await agenda.every(opts.retentionSweepMs ?? 60_000, SWEEP_IMAGES, undefined, { skipImmediate: true });
  if (opts.webhooks) await scheduleWebhookSweep(agenda, opts.sweepIntervalMs);
  if (opts.billing) await scheduleBillingSweep(agenda, opts.sweepIntervalMs);
  log.info({ crossProcessNotifications: channel.crossProcess, concurrency: opts.concurrency }, 'image worker started');

  return {
    async stop(timeoutMs = 60_000) {
      await queue.close(timeoutMs);
    },
  };
}
