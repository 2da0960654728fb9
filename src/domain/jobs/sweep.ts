import type { ImageWorkQueue, JobCredits, JobRecord, JobStore } from './records.js';
import type { ImageRunner } from './runner.js';
import { withdrawJob } from './service.js';
import type { JobSettlement } from './settlement.js';

export interface JobSweeperDeps {
  jobs: JobStore;
  credits: JobCredits;
  queue: ImageWorkQueue;
  /** Its settlement settles refunds and ends jobs (the same rules as the runs). */
  runner: Pick<ImageRunner, 'settlement'>;
  lockLifetimeMs: number;
  /** Uncharged jobs younger than this may still be in their create request. */
  unchargedGraceMs?: number;
  batch?: number;
}

export interface SweepReport {
  /** Create requests that died: their charge voided, or given back where it had applied. */
  voided: number;
  refunded: number;
  refundsSettled: number;
  /** Images of a job with a cancel requested that an interrupted cancel or a dead worker left. */
  canceled: number;
  finalized: number;
  requeued: number;
}

/**
 * Repairs what crashes leave behind; safe to run anywhere, any number of times, concurrently, because
 * it only calls the same guarded, once-per-op operations as the normal path.
 */
export class JobSweeper {
  constructor(private readonly deps: JobSweeperDeps) {}

  async sweep(now = new Date()): Promise<SweepReport> {
    const report: SweepReport = { voided: 0, refunded: 0, refundsSettled: 0, canceled: 0, finalized: 0, requeued: 0 };
    await this.reconcileUncharged(now, report);
    await this.repairStalled(now, report);
    return report;
  }

  /**
   * A create request died between insert and acceptance: its client was never told 201, so the job is
   * withdrawn (the charge voided, or refunded if it applied), never finished behind the client's back.
   */
  private async reconcileUncharged(now: Date, report: SweepReport): Promise<void> {
    const { jobs, credits } = this.deps;
    const cutoff = new Date(now.getTime() - (this.deps.unchargedGraceMs ?? 60_000));
    for (const job of await jobs.findUncharged(cutoff, this.deps.batch ?? 100)) {
      const outcome = await withdrawJob({ jobs, credits }, job);
      if (outcome === 'voided') report.voided++;
      else if (outcome === 'refunded') report.refunded++;
    }
  }

  /**
   * Non-final jobs without recent progress: settle pending refunds, finish an interrupted cancel,
   * finalize, requeue lost images.
   */
  private async repairStalled(now: Date, report: SweepReport): Promise<void> {
    const { jobs, queue, lockLifetimeMs } = this.deps;
    const { settlement } = this.deps.runner;
    const staleBefore = new Date(now.getTime() - lockLifetimeMs);
    for (const job of await jobs.findStalled(staleBefore, this.deps.batch ?? 100)) {
      for (const img of job.images) {
        if (img.refund === 'pending') {
          await settlement.refundImage(job, img.index, img.status === 'canceled' ? 'job canceled' : 'image generation failed');
          report.refundsSettled++;
        }
      }
      if (job.cancelRequestedAt) {
        await this.finishCancel(settlement, job, staleBefore, report);
        continue;
      }
      const fresh = await jobs.findById(job.id);
      if (!fresh) continue;
      if (await settlement.finalizeIfDone(fresh)) {
        report.finalized++;
        continue;
      }
      const lost = fresh.images.filter(
        (i) => i.status === 'queued' || (i.status === 'running' && (!i.heartbeatAt || i.heartbeatAt <= staleBefore)),
      );
      if (lost.length === 0) continue;
      const live = await queue.queuedIndexes(job.id);
      const missing = lost.map((i) => i.index).filter((i) => !live.has(i));
      if (missing.length) {
        await queue.enqueue(job.id, missing);
        report.requeued += missing.length;
      }
    }
  }

  /** A canceled job's images that nothing will run (queued, or their worker died) are canceled and refunded. */
  private async finishCancel(settlement: JobSettlement, job: JobRecord, staleBefore: Date, report: SweepReport): Promise<void> {
    for (const img of job.images) {
      if ((img.status === 'queued' || img.status === 'running') && (await settlement.cancelImage(job.id, img.index, staleBefore))) report.canceled++;
    }
    const fresh = await this.deps.jobs.findById(job.id);
    if (fresh && (await settlement.finalizeIfDone(fresh))) report.finalized++;
  }
}
