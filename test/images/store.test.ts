import { randomUUID } from 'node:crypto';
import mongoose, { type Connection } from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoJobStore } from '../../src/data/jobs.js';
import { loadOrCreateSigningSecret } from '../../src/data/jobs-signing-secret.js';
import type { JobRecord } from '../../src/domain/jobs/records.js';
import { GridFsImageStore } from '../../src/storage/gridfs.js';

let connection: Connection;
let store: MongoJobStore;

beforeAll(async () => {
  const uri = new URL(inject('mongoUri'));
  uri.pathname = `/images_store_${process.pid}`;
  connection = await mongoose.createConnection(uri.toString(), { serverSelectionTimeoutMS: 5000 }).asPromise();
  store = new MongoJobStore(connection);
  await store.init();
});

afterAll(async () => {
  await connection?.dropDatabase().catch(() => undefined);
  await connection?.close();
});

function newJob(n: number, accountId = 'a'.repeat(24)): JobRecord {
  const now = new Date();
  return {
    id: randomUUID(),
    accountId,
    keyId: 'k'.repeat(24),
    status: 'queued',
    totalImages: n,
    succeededImages: 0,
    failedImages: 0,
    canceledImages: 0,
    creditsUsed: n,
    creditsRefunded: 0,
    cancelRequestedAt: null,
    charged: true,
    images: Array.from({ length: n }, (_, index) => ({
      index,
      prompt: `p${index}`,
      status: 'queued' as const,
      attempt: 0,
      fileId: null,
      error: null,
      refund: 'none' as const,
      startedAt: null,
      heartbeatAt: null,
      finishedAt: null,
    })),
    createdAt: now,
    updatedAt: now,
    completedAt: null,
  };
}

describe('MongoJobStore guarded updates', () => {
  it('round-trips a job and hides uncharged ones', async () => {
    const job = newJob(2);
    await store.insert({ ...job, charged: false });
    expect(await store.findForAccount(job.accountId, [job.id])).toEqual([]);
    expect(await store.markCharged(job.id, new Date())).toBe(true);
    expect(await store.markCharged(job.id, new Date())).toBe(false);
    const [found] = await store.findForAccount(job.accountId, [job.id]);
    expect(found).toMatchObject({ id: job.id, charged: true, totalImages: 2 });
    expect(found.images[1]).toMatchObject({ index: 1, prompt: 'p1', status: 'queued', attempt: 0, fileId: null });
    expect(await store.findForAccount('b'.repeat(24), [job.id])).toEqual([]);
    expect(await store.deleteUncharged(job.id)).toBe(false);
  });

  it('claims an image once; concurrent claims of one image give one winner', async () => {
    const job = newJob(3);
    await store.insert(job);
    const now = new Date();
    const stale = new Date(now.getTime() - 60_000);
    const results = await Promise.all(Array.from({ length: 8 }, () => store.claimImage(job.id, 1, now, stale, now)));
    const winners = results.filter((r) => r !== null);
    expect(winners).toHaveLength(1);
    const after = await store.findById(job.id);
    expect(after!.status).toBe('running');
    expect(after!.images[1]).toMatchObject({ status: 'running', attempt: 1 });
    // Other images untouched by the arrayFilter.
    expect(after!.images[0]).toMatchObject({ status: 'queued', attempt: 0 });
    expect(after!.images[2]).toMatchObject({ status: 'queued', attempt: 0 });
  });

  it('takes over a stale attempt; the old attempt can no longer complete, fail or heartbeat', async () => {
    const job = newJob(1);
    await store.insert(job);
    const t0 = new Date(Date.now() - 10_000);
    await store.claimImage(job.id, 0, t0, new Date(t0.getTime() - 1000), t0);
    const now = new Date();
    // Not stale yet with a stale bound before t0.
    expect(await store.claimImage(job.id, 0, now, new Date(t0.getTime() - 1), now)).toBeNull();
    const second = await store.claimImage(job.id, 0, now, new Date(now.getTime() - 5000), now);
    expect(second!.image.attempt).toBe(2);
    expect(await store.heartbeat(job.id, 0, 1, now)).toBe(false);
    expect(await store.completeImage(job.id, 0, 1, stored('f1'), now)).toBeNull();
    expect(await store.failImage(job.id, 0, 1, 'late', now)).toBeNull();
    expect(await store.heartbeat(job.id, 0, 2, now)).toBe(true);
    const done = await store.completeImage(job.id, 0, 2, stored('f2'), now);
    expect(done!.job).toMatchObject({ id: job.id, succeededImages: 1, totalImages: 1 });
    expect(done!.image).toMatchObject({ index: 0, status: 'succeeded', fileId: 'f2' });
    expect(await store.completeImage(job.id, 0, 2, stored('f3'), now)).toBeNull();
    expect(await store.finalize(job.id, 'completed', now)).toMatchObject({ id: job.id, status: 'completed', completedAt: now });
    expect(await store.finalize(job.id, 'completed', now)).toBeNull();
    expect((await store.findById(job.id))!.completedAt).toBeInstanceOf(Date);
  });

  it('fails with a pending refund, marks the refund done once, releases for retry', async () => {
    const job = newJob(2);
    await store.insert(job);
    const now = new Date();
    const c = await store.claimImage(job.id, 0, now, now, now);
    const failed = await store.failImage(job.id, 0, c!.image.attempt, 'nope', now);
    expect(failed!.job).toMatchObject({ failedImages: 1, creditsRefunded: 0 });
    expect(failed!.image).toMatchObject({ index: 0, status: 'failed', refund: 'pending', error: 'nope' });
    const marks = await Promise.all([store.markRefunded(job.id, 0, now), store.markRefunded(job.id, 0, now)]);
    expect(marks.filter(Boolean)).toHaveLength(1);
    expect((await store.findById(job.id))!.creditsRefunded).toBe(1);

    const c2 = await store.claimImage(job.id, 1, now, now, now);
    expect(c2!.image).toMatchObject({ index: 1, prompt: 'p1', status: 'running', attempt: 1 });
    expect(await store.releaseImage(job.id, 1, c2!.image.attempt, 'try later', now)).toMatchObject({ image: { index: 1, status: 'queued', error: 'try later' } });
    expect((await store.findById(job.id))!.images[1]).toMatchObject({ status: 'queued', attempt: 1, error: 'try later' });
  });

  it('lists newest first and finds stalled and uncharged jobs for the sweep', async () => {
    const accountId = 'c'.repeat(24);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const j = newJob(1, accountId);
      j.createdAt = new Date(Date.now() - (10 - i) * 1000);
      j.updatedAt = j.createdAt;
      ids.push(j.id);
      await store.insert(j);
    }
    const page = await store.listForAccount(accountId, 2, null);
    expect(page.map((j) => j.id)).toEqual([ids[2], ids[1]]);
    const next = await store.listForAccount(accountId, 2, { createdAt: page[1].createdAt, id: page[1].id });
    expect(next.map((j) => j.id)).toEqual([ids[0]]);
    const stalled = await store.findStalled(new Date(Date.now() - 5000), 100);
    expect(stalled.map((j) => j.id)).toEqual(expect.arrayContaining(ids));
    const unch = newJob(1);
    unch.charged = false;
    unch.createdAt = new Date(Date.now() - 120_000);
    await store.insert(unch);
    expect((await store.findUncharged(new Date(Date.now() - 60_000), 100)).map((j) => j.id)).toContain(unch.id);
  });
});

describe('GridFS image store and signing secret', () => {
  it('stores, stats, reads and deletes image bytes', async () => {
    const images = new GridFsImageStore(connection.db!);
    const data = Buffer.alloc(300_000, 7); // spans two GridFS chunks
    const info = await images.put({ jobId: randomUUID(), index: 0, attempt: 1 }, { data, contentType: 'image/png' });
    expect(info).toMatchObject({ contentType: 'image/png', length: 300_000 });
    expect(info.etag).toMatch(/^"[\w-]+"$/);
    expect(await images.stat(info.fileId)).toEqual(info);
    const file = await images.get(info.fileId);
    expect(file!.data.equals(data)).toBe(true);
    await images.delete(info.fileId);
    expect(await images.get(info.fileId)).toBeNull();
    expect(await images.stat('not-an-id')).toBeNull();
    await images.delete(info.fileId);
  });

  it('creates the signing secret once and returns the same one everywhere', async () => {
    const secrets = await Promise.all([loadOrCreateSigningSecret(connection), loadOrCreateSigningSecret(connection)]);
    expect(secrets[0]).toHaveLength(43);
    expect(secrets[1]).toBe(secrets[0]);
  });
});

/** What a run records of stored bytes, for store-level tests. */
function stored(fileId: string) {
  return { fileId, contentType: 'image/png', width: 256, height: 256 };
}
