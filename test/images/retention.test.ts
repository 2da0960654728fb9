import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';

// IMAGE_RETENTION end to end with two gateways' workers on one database and one fs directory: the
// sweep deletes the bytes, the URL answers 410, the job stays readable with url null, expired true.
let a: TestApp;
let b: TestApp;
let workers: RunningWorker[] = [];
let alice: TestAccount;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'images-retention-'));
  const env = { IN_PROCESS_WORKER: 'false', IMAGE_STORE: 'fs', IMAGE_DIR: dir, IMAGE_RETENTION: '3s', IMAGE_SWEEP_INTERVAL: '1s', QUEUE_POLL_INTERVAL_MS: '50' };
  a = await startTestApp(env);
  b = await startTestApp(env);
  const quiet = { info() {}, warn() {}, error() {} };
  workers = [await startConfiguredImageWorker(a.config, a.services.imageJobs, quiet), await startConfiguredImageWorker(b.config, b.services.imageJobs, quiet)];
  alice = await a.createAccountWithKey({ credits: 10 });
});

afterAll(async () => {
  for (const w of workers) await w.stop();
  await b?.close();
  await a?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const headers = () => ({ authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' });

describe('retention', () => {
  it('expired images: bytes deleted by the workers (not before their time), 410 Image expired, the job readable; credits untouched', async () => {
    const res = await fetch(`${a.baseUrl}/api/playground/images`, { method: 'POST', headers: headers(), body: JSON.stringify({ prompts: ['short-lived', 'also short-lived'] }) });
    const { jobId } = await res.json();
    const done = await until(async () => {
      const job = await (await fetch(`${a.baseUrl}/api/playground/images/${jobId}`, { headers: headers() })).json();
      return job.status === 'completed' && job;
    }, 'job completed');
    const urls: string[] = done.images.map((i: { url: string }) => i.url);
    const jobs = a.connection.db!.collection('jobs');
    const stored = (await jobs.findOne({ _id: jobId as never }))!;
    const files = stored.images.map((i: { fileId: string }) => join(dir, i.fileId.slice('fs:'.length)));
    for (const f of files) await access(f);
    const balance = (await a.services.credits.getAccount(alice.accountId))!.credits;

    // The sweep (every second, in either worker) deletes both files once they are 3 s old.
    const swept = await until(async () => {
      const doc = (await jobs.findOne({ _id: jobId as never }))!;
      return doc.images.every((i: { fileId: string | null }) => i.fileId === null) && doc;
    }, 'files forgotten');
    for (const [i, image] of swept.images.entries()) {
      expect(image.expiredAt.getTime() - stored.images[i].finishedAt.getTime()).toBeGreaterThanOrEqual(3000);
      await expect(access(files[i]!)).rejects.toMatchObject({ code: 'ENOENT' });
    }
    for (const url of urls) {
      const gone = await fetch(url);
      expect(gone.status).toBe(410);
      expect(await gone.json()).toMatchObject({ code: 'image_expired', error: 'Image expired' });
    }
    for (const app of [a, b]) {
      const job = await (await fetch(`${app.baseUrl}/api/playground/images/${jobId}`, { headers: headers() })).json();
      expect(job).toMatchObject({ status: 'completed', succeededImages: 2, creditsRefunded: 0 });
      for (const image of job.images) expect(image).toMatchObject({ status: 'succeeded', url: null, expired: true });
    }
    const { data } = await (
      await fetch(`${b.baseUrl}/graphql`, { method: 'POST', headers: headers(), body: JSON.stringify({ query: `{ job(id: "${jobId}") { images { url expired } } }` }) })
    ).json();
    expect(data.job.images).toEqual([{ url: null, expired: true }, { url: null, expired: true }]);
    expect((await a.services.credits.getAccount(alice.accountId))!.credits).toBe(balance);
    // The job is marked swept by the sweep's last write, which can land after the files are forgotten.
    const marked = await until(async () => {
      const doc = (await jobs.findOne({ _id: jobId as never }))!;
      return doc.retentionSwept === true && doc;
    }, 'the job marked swept');
    expect(marked.oldestStoredAt).toBeUndefined();
  });
});
