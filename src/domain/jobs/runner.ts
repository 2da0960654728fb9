import { ProviderError, isRetryableError, type GenerateOptions, type GeneratedImage, type ImageProvider } from '../../providers/images/types.js';
import type { ImageKey, ImageStore } from '../../storage/types.js';
import { noMetrics, type DomainMetrics } from '../metrics.js';
import { parseSize, seedOf, type ImageOptions } from './options.js';
import type { JobCredits, JobStore, JobSummary } from './records.js';
import { JobSettlement } from './settlement.js';

export interface ImageRunnerDeps {
  jobs: JobStore;
  credits: JobCredits;
  provider: ImageProvider;
  images: ImageStore;
  /** A running image whose heartbeat is older than this was abandoned by its worker (JOB_LOCK_LIFETIME_MS). */
  lockLifetimeMs: number;
  /** Claims of one image (crashes included) before it fails for good. */
  maxAttempts: number;
  /** Refunds and the end of jobs; default: one on `jobs` and `credits`. */
  settlement?: JobSettlement;
  log?: (msg: string, extra?: Record<string, unknown>) => void;
  /** Told how each generation this runner recorded ended, and how long the provider took. */
  metrics?: Pick<DomainMetrics, 'imageGenerated'>;
}

/** How a run ended, for the queue door: `retry` asks for a later run (with backoff). */
export type RunOutcome =
  | { kind: 'succeeded' }
  | { kind: 'failed'; error: string }
  | { kind: 'retry'; error: string }
  /** Another attempt holds the image and looks alive: look again once its heartbeat would be stale. */
  | { kind: 'busy'; retryAt: Date }
  /** Nothing to do: already final or canceled, job gone, or this attempt lost the image to another one. */
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
 * An image of a job with a cancel requested is never claimed: the run cancels it instead.
 */
export class ImageRunner {
  readonly settlement: JobSettlement;
  private readonly metrics: Pick<DomainMetrics, 'imageGenerated'>;

  constructor(private readonly deps: ImageRunnerDeps) {
    this.settlement = deps.settlement ?? new JobSettlement({ jobs: deps.jobs, credits: deps.credits });
    this.metrics = deps.metrics ?? noMetrics;
  }

  async run(jobId: string, index: number, lease: RunLease = {}): Promise<RunOutcome> {
    const { jobs, lockLifetimeMs } = this.deps;
    const now = new Date();
    const staleBefore = new Date(now.getTime() - lockLifetimeMs);
    const claimed = await jobs.claimImage(jobId, index, now, staleBefore, lease.lockedAt ?? now);
    if (!claimed) return this.whyNotClaimed(jobId, index, staleBefore);
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
    const started = performance.now();
    let seconds = 0;
    try {
      const options = claimed.job.options;
      const size = options ? parseSize(options.size) : null;
      const generated = await this.deps.provider.generate(image.prompt, { signal, ...generateOptions(options, index) });
      seconds = (performance.now() - started) / 1000;
      const stored = await this.storeImage({ jobId, index, attempt }, generated);
      fileId = stored.fileId;
      stopHeartbeat();
      const ref = {
        fileId: stored.fileId,
        contentType: generated.contentType,
        width: generated.width ?? size?.width ?? 0,
        height: generated.height ?? size?.height ?? 0,
      };
      const after = await jobs.completeImage(jobId, index, attempt, ref, new Date());
      if (!after) {
        await this.deps.images.delete(stored.fileId);
        return { kind: 'skipped', reason: 'attempt superseded before completion' };
      }
      this.metrics.imageGenerated('succeeded', seconds);
      await this.settlement.finalizeIfDone(after.job);
      return { kind: 'succeeded' };
    } catch (err) {
      stopHeartbeat();
      if (seconds === 0) seconds = (performance.now() - started) / 1000;
      if (fileId) await this.deps.images.delete(fileId).catch(() => undefined);
      const message = errorText(err);
      if (isRetryableError(err) && attempt < this.deps.maxAttempts) {
        const released = await jobs.releaseImage(jobId, index, attempt, message, new Date());
        if (!released) return { kind: 'skipped', reason: 'attempt superseded' };
        // Canceled while it ran: it is not retried but canceled (and refunded) now, not at the next run.
        if (released.job.cancelRequestedAt) {
          await this.settlement.cancelImage(jobId, index, null);
          return { kind: 'skipped', reason: 'job canceled' };
        }
        this.metrics.imageGenerated('retried', seconds);
        return { kind: 'retry', error: message };
      }
      if (isProviderOutcome(err)) return this.fail(claimed.job, index, attempt, message, seconds);
      // Infrastructure fault (database, storage): give the image back and let the queue retry.
      await jobs.releaseImage(jobId, index, attempt, message, new Date()).catch(() => undefined);
      throw err;
    }
  }

  /**
   * An image store that does not answer is retried as a provider's failure is (and the image refunded
   * when its attempts run out), rather than holding the image until the queue's lock expires.
   */
  private async storeImage(key: ImageKey, generated: GeneratedImage) {
    try {
      return await this.deps.images.put(key, generated);
    } catch (err) {
      throw new ProviderError('provider_network_error', 'Image storage unavailable', { cause: err });
    }
  }

  /** `seconds`: the provider's time, when it was asked (not for an image out of attempts). */
  private async fail(job: JobSummary, index: number, attempt: number, message: string, seconds?: number): Promise<RunOutcome> {
    const after = await this.deps.jobs.failImage(job.id, index, attempt, message, new Date());
    if (!after) return { kind: 'skipped', reason: 'attempt superseded before failing' };
    this.metrics.imageGenerated('failed', seconds);
    await this.settlement.refundImage(after.job, index, 'image generation failed');
    return { kind: 'failed', error: message };
  }

  private async whyNotClaimed(jobId: string, index: number, staleBefore: Date): Promise<RunOutcome> {
    const job = await this.deps.jobs.findById(jobId);
    const image = job?.images.find((i) => i.index === index);
    if (!job || !image) return { kind: 'skipped', reason: 'job or image not found' };
    if (job.cancelRequestedAt) {
      // A cancel interrupted before it reached this image (a crash), or an image whose worker died
      // after the cancel, is canceled here; a live run of the image is left to end by itself.
      await this.settlement.cancelImage(jobId, index, staleBefore);
      return { kind: 'skipped', reason: 'job canceled' };
    }
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

/** Errors that are the provider's verdict on this prompt (they carry a `retryable` flag), not infrastructure faults. */
function isProviderOutcome(err: unknown): boolean {
  return typeof err === 'object' && err !== null && typeof (err as { retryable?: unknown }).retryable === 'boolean' && 'code' in err && String((err as { code: unknown }).code).startsWith('provider_');
}

/** What the provider is asked for image `index` of a job with these options (none: its defaults). */
function generateOptions(options: ImageOptions | undefined, index: number): GenerateOptions {
  if (!options) return {};
  return { size: parseSize(options.size) ?? undefined, format: options.format, seed: seedOf(options, index), negativePrompt: options.negativePrompt };
}

function errorText(err: unknown): string {
  if (isProviderOutcome(err)) return String((err as Error).message).slice(0, 500);
  return 'Image generation failed';
}
