import type { DomainMetrics } from '../metrics.js';
import { costOf } from '../operations/catalog.js';
import { sourceOf } from '../principal.js';
import type { JobCredits, JobRecord, JobStore, JobSummary } from './records.js';
import { FINAL_JOB_STATUSES, type FinalJobStatus } from './types.js';

export interface JobSettlementDeps {
  jobs: JobStore;
  credits: JobCredits;
  /**
   * Told of every job that ended, once, by whichever caller ended it (its webhook event is due). A
   * failure here fails nothing: the job keeps its pending event and the webhook sweep publishes it.
   */
  onEnded?: (job: JobRecord) => Promise<void>;
  /** Told of every job that ended, once (by the caller whose guarded update ended it). */
  metrics?: Pick<DomainMetrics, 'imageJobFinished'>;
}

/** Why an image's credit went back, as its refund's audit entry says. */
export type RefundReason = 'image generation failed' | 'job canceled';

/** Refund operation id of one image: one refund per image, whichever door or process gives it. */
export const refundOpId = (jobId: string, index: number) => `refund:${jobId}:${index}`;

/**
 * How a job's images end without a picture (a failure, a cancel) and how the job reaches its final
 * state: the one place for both, shared by the runner, the sweep and the cancel of every door. Each
 * step is a guarded update or a once-per-op credit operation, so any number of callers may race.
 * `finalizeIfDone` is the only way a job becomes completed, failed or canceled: an event raised when a
 * job ends belongs there.
 */
export class JobSettlement {
  constructor(private readonly deps: JobSettlementDeps) {}

  /**
   * Gives an image's credit back (once, under its op id), records it on the job, and finalizes the job
   * if that was the last thing it waited for. Also settles a refund a crash left pending.
   */
  async refundImage(job: JobSummary, index: number, reason: RefundReason): Promise<void> {
    await this.deps.credits.refund(
      job.accountId,
      costOf('generate'),
      refundOpId(job.id, index),
      { jobId: job.id, index, keyId: job.keyId, reason },
      // Counted under whoever started the job (its key, or the console), on the day of the refund.
      { service: 'images', source: sourceOf(job) },
    );
    const after = await this.deps.jobs.markRefunded(job.id, index, new Date());
    // The job records the refund (marked here or by whoever got there first): the id may go.
    await this.deps.credits.settle(job.accountId, refundOpId(job.id, index));
    // null: someone else marked it; they finalize.
    if (after) await this.finalizeIfDone(after.job);
  }

  /**
   * Cancels one image of a job with a cancel requested: a queued one, or (given `staleBefore`) one whose
   * worker died. Only the caller whose guarded update moved the image refunds it, so concurrent cancels,
   * workers and sweeps give each credit back once. True when this call canceled it.
   */
  async cancelImage(jobId: string, index: number, staleBefore: Date | null): Promise<boolean> {
    const after = await this.deps.jobs.cancelImage(jobId, index, staleBefore, new Date());
    if (!after) return false;
    await this.refundImage(after.job, index, 'job canceled');
    return true;
  }

  /**
   * Moves a job whose images are all final and whose refunds are all settled to its final status, once:
   * canceled when a cancel was requested, else completed (at least one image succeeded) or failed.
   * Returns the job as it ended, or null when it is not done yet or another caller ended it.
   */
  async finalizeIfDone(job: JobSummary): Promise<JobRecord | null> {
    if (FINAL_JOB_STATUSES.has(job.status)) return null;
    const ended = job.succeededImages + job.failedImages + job.canceledImages;
    const refunded = job.failedImages + job.canceledImages;
    if (ended !== job.totalImages || job.creditsRefunded !== refunded) return null;
    const status: FinalJobStatus = job.cancelRequestedAt ? 'canceled' : job.succeededImages > 0 ? 'completed' : 'failed';
    const endedJob = await this.deps.jobs.finalize(job.id, status, new Date());
    if (endedJob) {
      this.deps.metrics?.imageJobFinished(status);
      await this.deps.onEnded?.(endedJob).catch(() => undefined);
    }
    return endedJob;
  }
}
