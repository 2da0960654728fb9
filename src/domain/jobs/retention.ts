import type { ImageStore } from '../../storage/types.js';
import type { JobStore } from './records.js';

export interface RetentionDeps {
  jobs: Pick<JobStore, 'findRetained' | 'expireImage' | 'forgetFile' | 'findById' | 'setOldestStored'>;
  images: Pick<ImageStore, 'delete'>;
  /** IMAGE_RETENTION. */
  retentionMs: number;
  batch?: number;
}

/** A mark this old without its delete: the sweep that made it died. */
const ABANDONED_MS = 10 * 60_000;

export interface RetentionReport {
  /** Images whose bytes this sweep deleted. */
  deleted: number;
}

/**
 * Deletes the bytes of images older than the retention, from the workers. Safe with any number of
 * sweeps at once: an image is marked expired by one guarded update (one sweep wins it) before its bytes
 * go, and only once it succeeded at least `retentionMs` ago. A sweep that dies between the mark and the
 * delete leaves the fileId on the image: a sweep ten minutes later deletes it (deleting is idempotent).
 */
export class ImageRetention {
  constructor(private readonly deps: RetentionDeps) {}

  async sweep(now = new Date()): Promise<RetentionReport> {
    const { jobs, images, retentionMs } = this.deps;
    const cutoff = new Date(now.getTime() - retentionMs);
    const report: RetentionReport = { deleted: 0 };
    for (const job of await jobs.findRetained(cutoff, this.deps.batch ?? 100)) {
      for (const img of job.images) {
        if (img.status !== 'succeeded' || !img.fileId || !img.finishedAt || img.finishedAt > cutoff) continue;
        if (img.expiredAt) {
          // Marked by another sweep: it deletes the bytes, unless it died long enough ago.
          if (img.expiredAt.getTime() > now.getTime() - ABANDONED_MS) continue;
        } else if (!(await jobs.expireImage(job.id, img.index, img.fileId, cutoff, now))) continue;
        await images.delete(img.fileId);
        await jobs.forgetFile(job.id, img.index, img.fileId);
        report.deleted++;
      }
      // The job's next expiry: its oldest image still stored (none: it leaves the sweep's index).
      const fresh = await jobs.findById(job.id);
      if (!fresh) continue;
      const stored = fresh.images.filter((i) => i.status === 'succeeded' && i.fileId && i.finishedAt).map((i) => i.finishedAt!.getTime());
      await jobs.setOldestStored(fresh.id, fresh.updatedAt, stored.length ? new Date(Math.min(...stored)) : null);
    }
    return report;
  }
}
