import type { ImageProvider } from '../../providers/images/types.js';
import { isRetryableError } from '../../providers/images/types.js';
import type { ImageStore } from '../../storage/types.js';
import { sourceOf } from '../principal.js';
import type { JobCredits, JobStore, JobSummary } from './records.js';

export interface ImageRunnerDeps {
  jobs: JobStore;
  credits: JobCredits;
  provider: ImageProvider;
  images: ImageStore;
  /** A running image whose heartbeat is older than this was abandoned by its worker (JOB_LOCK_LIFETIME_MS). */
  lockLifetimeMs: number;
  /** Claims of one image (crashes included) before it fails for good. */
  maxAttempts: number;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  /** The job just became final (its webhook event is due): publishes it. Failures are left to the sweep. */
  onFinal?: (jobId: string) => Promise<void>;
}

/** How a run ended, for the queue door: `retry` asks for a later run (with backoff). */
export type RunOutcome =
  | { kind: 'succeeded' }
  | { kind: 'failed'; error: string }
  | { kind: 'retry'; error: string }
  /** Another attempt holds the image and looks alive: look again once its heartbeat would be stale. */
  | { kind: 'busy'; retryAt: Date }
  /** Nothing to do: already final, job gone, or this attempt lost the image to another one. */
  | { kind: 'skipped'; reason: string };

export interface RunLease {
  /**
   * When the queue locked this run. The claim records it as the first heartbeat, so the image never
   * looks alive for longer than the queue's lock does.
   */
  lockedAt?: Date;
  /** Renews the queue's lock; called right after each heartbeat is written (same ordering reason). */
  renew?: () => Promise<void>;
  signal?: AbortSignal;
}

/**
 * Runs one image of a job: claim, generate, store, complete; or fail and refund exactly once. Every
 * state change is a guarded update keyed by the attempt, so a late or duplicate run changes nothing.
 */
export class ImageRunner {
  constructor(private readonly deps: ImageRunnerDeps) {}

  async run(jobId: string, index: number, lease: RunLease = {}): Promise<RunOutcome> {
    const { jobs, lockLifetimeMs } = this.deps;
    const now = new Date();
    const claimed = await jobs.claimImage(jobId, index, now, new Date(now.getTime() - lockLifetimeMs), lease.lockedAt ?? now);
    if (!claimed) return this.whyNotClaimed(jobId, index);
    const { image } = claimed;
    const attempt = image.attempt;

    if (attempt > this.deps.maxAttempts) {
      // Earlier attempts were claimed and never finished (worker crashes): stop retrying a poison prompt.
      return this.fail(claimed.job, index, attempt, `Image generation did not finish after ${this.deps.maxAttempts} attempts`);
    }

    const abort = new AbortController();
    const signal = lease.signal ? AbortSignal.any([lease.signal, abort.signal]) : abort.signal;
    const stopHeartbeat = this.startHeartbeat(jobId, index, attempt, lease, abort);
    let fileId: string | null = null;
    try {
      const generated = await this.deps.provider.generate(image.prompt, { signal });
      const stored = await this.deps.images.put({ jobId, index, attempt }, generated);
      fileId = stored.fileId;
      stopHeartbeat();
      const after = await jobs.completeImage(jobId, index, attempt, stored.fileId, new Date());
      if (!after) {
        await this.deps.images.delete(stored.fileId);
        return { kind: 'skipped', reason: 'attempt superseded before completion' };
      }
      await this.finalizeIfDone(after.job);
      return { kind: 'succeeded' };
    } catch (err) {
      stopHeartbeat();
      if (fileId) await this.deps.images.delete(fileId).catch(() => undefined);
      const message = errorText(err);
      if (isRetryableError(err) && attempt < this.deps.maxAttempts) {
        const released = await jobs.releaseImage(jobId, index, attempt, message, new Date());
        return released ? { kind: 'retry', error: message } : { kind: 'skipped', reason: 'attempt superseded' };
      }
      if (isProviderOutcome(err)) return this.fail(claimed.job, index, attempt, message);
      // Infrastructure fault (database, storage): give the image back and let the queue retry.
      await jobs.releaseImage(jobId, index, attempt, message, new Date()).catch(() => undefined);
      throw err;
    }
  }

  /** Settles a refund left pending (by a crash between the steps) and finalizes the job if it is done. */
  async settleRefund(job: JobSummary, index: number): Promise<void> {
    await this.deps.credits.refund(
      job.accountId,
      1,
      refundOpId(job.id, index),
      { jobId: job.id, index, keyId: job.keyId, reason: 'image generation failed' },
      // Counted under whoever started the job (its key, or the console), on the day of the refund.
      { service: 'images', source: sourceOf(job) },
    );
    const after = await this.deps.jobs.markRefunded(job.id, index, new Date());
    // The job records the refund (marked here or by whoever got there first): the id may go.
    await this.deps.credits.settle(job.accountId, refundOpId(job.id, index));
    // null: someone else marked it; they finalize.
    if (after) await this.finalizeIfDone(after.job);
  }

  /** Moves a job whose images are all final (and refunds all settled) to its final status, once. */
  async finalizeIfDone(job: JobSummary): Promise<boolean> {
    const allFinal = job.succeededImages + job.failedImages === job.totalImages;
    const refundsSettled = job.creditsRefunded === job.failedImages;
    if (!allFinal || !refundsSettled || job.status === 'completed' || job.status === 'failed') return false;
    const finalized = await this.deps.jobs.finalize(job.id, job.succeededImages > 0 ? 'completed' : 'failed', new Date());
    if (finalized) await this.deps.onFinal?.(job.id).catch((err: unknown) => this.deps.log?.('publishing the job event failed', { jobId: job.id, err }));
    return finalized;
  }

  private async fail(job: JobSummary, index: number, attempt: number, message: string): Promise<RunOutcome> {
    const after = await this.deps.jobs.failImage(job.id, index, attempt, message, new Date());
    if (!after) return { kind: 'skipped', reason: 'attempt superseded before failing' };
    await this.settleRefund(after.job, index);
    return { kind: 'failed', error: message };
  }

  private async whyNotClaimed(jobId: string, index: number): Promise<RunOutcome> {
    const job = await this.deps.jobs.findById(jobId);
    const image = job?.images.find((i) => i.index === index);
    if (!job || !image) return { kind: 'skipped', reason: 'job or image not found' };
    if (image.status === 'running' && image.heartbeatAt) {
      return { kind: 'busy', retryAt: new Date(image.heartbeatAt.getTime() + this.deps.lockLifetimeMs + 50) };
    }
    return { kind: 'skipped', reason: `image is ${image.status}` };
  }

  /**
   * Keeps the attempt alive while the provider works: image heartbeat first, then the queue lock, every
   * third of the lock lifetime. A heartbeat that no longer matches means another attempt took over: abort.
   */
  private startHeartbeat(jobId: string, index: number, attempt: number, lease: RunLease, abort: AbortController): () => void {
    const every = Math.max(100, Math.floor(this.deps.lockLifetimeMs / 3));
    const timer = setInterval(() => {
      void (async () => {
        const alive = await this.deps.jobs.heartbeat(jobId, index, attempt, new Date());
        if (!alive) return abort.abort();
        await lease.renew?.();
      })().catch((err: unknown) => this.deps.log?.('heartbeat failed', { jobId, index, err }));
    }, every);
    timer.unref();
    return () => clearInterval(timer);
  }
}

export const refundOpId = (jobId: string, index: number) => `refund:${jobId}:${index}`;

/** Errors that are the provider's verdict on this prompt (they carry a `retryable` flag), not infrastructure faults. */
function isProviderOutcome(err: unknown): boolean {
  return typeof err === 'object' && err !== null && typeof (err as { retryable?: unknown }).retryable === 'boolean' && 'code' in err && String((err as { code: unknown }).code).startsWith('provider_');
}

function errorText(err: unknown): string {
  if (isProviderOutcome(err)) return String((err as Error).message).slice(0, 500);
  return 'Image generation failed';
}
