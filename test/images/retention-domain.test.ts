import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../src/domain/jobs/records.js';
import { ImageRetention } from '../../src/domain/jobs/retention.js';
import { MemoryImageStore, MemoryJobStore } from './memory-fakes.js';

const HOUR = 3_600_000;

/** A completed job whose images succeeded at the given times, each with a stored file. */
async function storedJob(jobs: MemoryJobStore, images: MemoryImageStore, finished: Date[], legacy = false): Promise<JobRecord> {
  const id = randomUUID();
  const last = new Date(Math.max(...finished.map((d) => d.getTime())));
  const job: JobRecord = {
    id,
    accountId: 'a',
    keyId: null,
    status: 'completed',
    totalImages: finished.length,
    succeededImages: finished.length,
    failedImages: 0,
    canceledImages: 0,
    creditsUsed: finished.length,
    creditsRefunded: 0,
    cancelRequestedAt: null,
    charged: true,
    images: [],
    createdAt: finished[0]!,
    updatedAt: last,
    completedAt: last,
    ...(legacy ? {} : { oldestStoredAt: new Date(Math.min(...finished.map((d) => d.getTime()))) }),
  };
  for (const [index, at] of finished.entries()) {
    const put = await images.put({ jobId: id, index, attempt: 1 }, { data: Buffer.from(`img ${index}`), contentType: 'image/png' });
    job.images.push({ index, prompt: `p${index}`, status: 'succeeded', attempt: 1, fileId: put.fileId, error: null, refund: 'none', startedAt: at, heartbeatAt: at, finishedAt: at });
  }
  await jobs.insert(job);
  return job;
}

/** Counts deletes per file: "each image deleted once" is a count. */
class CountingImages extends MemoryImageStore {
  readonly deletes = new Map<string, number>();
  override async delete(fileId: string) {
    this.deletes.set(fileId, (this.deletes.get(fileId) ?? 0) + 1);
    await super.delete(fileId);
  }
}

describe('image retention sweep', () => {
  it('deletes images older than the retention, once each, with many sweeps at once; none early', async () => {
    const jobs = new MemoryJobStore();
    const images = new CountingImages();
    const now = new Date();
    const old = await storedJob(jobs, images, [new Date(now.getTime() - 5 * HOUR), new Date(now.getTime() - 30 * 60_000)]);
    const legacy = await storedJob(jobs, images, [new Date(now.getTime() - 3 * HOUR)], true);
    const fresh = await storedJob(jobs, images, [new Date(now.getTime() - HOUR + 1000)]);
    const retention = new ImageRetention({ jobs, images, retentionMs: HOUR });

    const reports = await Promise.all(Array.from({ length: 5 }, () => retention.sweep(now)));
    expect(reports.reduce((n, r) => n + r.deleted, 0)).toBe(2);
    expect([...images.deletes.values()]).toEqual([1, 1]);
    expect(images.deletes.has(old.images[0]!.fileId!)).toBe(true);
    expect(images.deletes.has(legacy.images[0]!.fileId!)).toBe(true);

    const after = jobs.docs.get(old.id)!;
    expect(after.images[0]).toMatchObject({ fileId: null });
    expect(after.images[0]!.expiredAt).toEqual(now);
    // The second image is half an hour old: kept, and the job's next expiry is its time.
    expect(after.images[1]!.fileId).toBe(old.images[1]!.fileId);
    expect(after.oldestStoredAt).toEqual(old.images[1]!.finishedAt);
    expect(jobs.docs.get(legacy.id)!.retentionSwept).toBe(true);
    expect(jobs.docs.get(fresh.id)!.images[0]!.fileId).toBe(fresh.images[0]!.fileId);
    expect(images.files.has(fresh.images[0]!.fileId!)).toBe(true);

    // Later, the rest goes; a job with nothing stored leaves the sweep.
    const later = new Date(now.getTime() + HOUR);
    expect((await retention.sweep(later)).deleted).toBe(2);
    expect(jobs.docs.get(old.id)!.oldestStoredAt).toBeUndefined();
    expect((await retention.sweep(later)).deleted).toBe(0);
    expect([...images.deletes.values()].every((n) => n === 1)).toBe(true);
  });

  it('a sweep that died between its mark and the delete is finished ten minutes later, not at once', async () => {
    const jobs = new MemoryJobStore();
    const images = new CountingImages();
    const now = new Date();
    const job = await storedJob(jobs, images, [new Date(now.getTime() - 2 * HOUR)]);
    const fileId = job.images[0]!.fileId!;
    expect(await jobs.expireImage(job.id, 0, fileId, new Date(now.getTime() - HOUR), now)).toBe(true);
    const retention = new ImageRetention({ jobs, images, retentionMs: HOUR });
    expect((await retention.sweep(new Date(now.getTime() + 60_000))).deleted).toBe(0);
    expect(images.files.has(fileId)).toBe(true);
    expect((await retention.sweep(new Date(now.getTime() + 11 * 60_000))).deleted).toBe(1);
    expect(images.files.has(fileId)).toBe(false);
    expect(images.deletes.get(fileId)).toBe(1);
  });
});
