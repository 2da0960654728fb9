import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { startS3, type S3StandIn } from '../helpers/s3.js';
import { until } from '../helpers/until.js';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';

// IMAGE_STORE end to end on one database: GridFS as before, then S3 (s3rver on loopback) with the
// GridFS images still served, presigned URLs, and the object store failing under a fetch and a run.
let s3: S3StandIn;
let gridApp: TestApp;
let s3App: TestApp;
let presignedApp: TestApp;
let worker: RunningWorker | undefined;
let alice: TestAccount;

const quiet = { info() {}, warn() {}, error() {} };
const common = { IN_PROCESS_WORKER: 'false', QUEUE_POLL_INTERVAL_MS: '50', IMAGE_MAX_ATTEMPTS: '2' };

beforeAll(async () => {
  s3 = await startS3();
  gridApp = await startTestApp({ ...common, IMAGE_STORE: 'gridfs' });
  s3App = await startTestApp({ ...common, ...s3.env });
  presignedApp = await startTestApp({ ...common, ...s3.env, IMAGE_URL_MODE: 'presigned' });
  alice = await gridApp.createAccountWithKey({ credits: 50 });
});

afterAll(async () => {
  await worker?.stop();
  for (const app of [presignedApp, s3App, gridApp]) await app?.close();
  await s3?.close();
});

/** Only one worker at a time: they share the queue, and each test means one store. */
async function workWith(app: TestApp) {
  await worker?.stop();
  worker = await startConfiguredImageWorker(app.config, app.services.imageJobs, quiet);
}

const auth = { authorization: '' };
async function start(app: TestApp, prompts: string[], options: Record<string, unknown> = {}) {
  auth.authorization = `Bearer ${alice.key}`;
  const res = await fetch(`${app.baseUrl}/api/playground/images`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ prompts, ...options }) });
  expect(res.status).toBe(201);
  return (await res.json()).jobId as string;
}
const read = async (app: TestApp, jobId: string) => (await fetch(`${app.baseUrl}/api/playground/images/${jobId}`, { headers: auth })).json();
const final = (app: TestApp, jobId: string) =>
  until(async () => {
    const job = await read(app, jobId);
    return ['completed', 'failed'].includes(job.status) && job;
  }, 'job final');
const bytes = async (url: string) => {
  const res = await fetch(url);
  expect(res.status, url).toBe(200);
  return Buffer.from(await res.arrayBuffer());
};
const gridFiles = () => gridApp.connection.db!.collection('images.files').countDocuments();

describe('switching from GridFS to S3', () => {
  let oldJob: string;
  let oldBytes: Buffer;
  let newJob: string;

  it('gridfs: stores in the database, as before', async () => {
    await workWith(gridApp);
    oldJob = await start(gridApp, ['kept in gridfs']);
    const job = await final(gridApp, oldJob);
    expect(job.status).toBe('completed');
    oldBytes = await bytes(job.images[0].url);
    expect(await gridFiles()).toBe(1);
  });

  it('s3: new images go to the bucket (no bytes in MongoDB), and the GridFS image is still served', async () => {
    await workWith(s3App);
    newJob = await start(s3App, ['kept in s3'], { format: 'jpeg', size: '512x512' });
    const job = await final(s3App, newJob);
    expect(job.status).toBe('completed');
    const data = await bytes(job.images[0].url);
    expect(data.subarray(0, 3).equals(Buffer.from([0xff, 0xd8, 0xff]))).toBe(true);
    expect(await gridFiles()).toBe(1);
    const old = await read(s3App, oldJob);
    expect((await bytes(old.images[0].url)).equals(oldBytes)).toBe(true);
  });

  it('a job stored before options existed reads with the defaults, and its image is served', async () => {
    await gridApp.connection.db!.collection('jobs').updateOne(
      { _id: oldJob as never },
      { $unset: { options: '', oldestStoredAt: '', 'images.0.width': '', 'images.0.height': '', 'images.0.contentType': '' } },
    );
    const job = await read(s3App, oldJob);
    expect(job.options).toEqual({ size: '256x256', format: 'png', seed: null, negativePrompt: null });
    expect(job.images[0]).toMatchObject({ width: 256, height: 256, contentType: 'image/png', seed: null, expired: false });
    expect((await bytes(job.images[0].url)).equals(oldBytes)).toBe(true);
  });

  it('IMAGE_URL_MODE=presigned: the url is a presigned GET of the bucket, and it serves the bytes', async () => {
    const job = await read(presignedApp, newJob);
    const url = new URL(job.images[0].url);
    expect(url.origin).toBe(s3.endpoint);
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    const viaGateway = await bytes((await read(s3App, newJob)).images[0].url);
    expect((await bytes(url.toString())).equals(viaGateway)).toBe(true);
    // GridFS images have no presigned URL: they keep the gateway's.
    expect((await read(presignedApp, oldJob)).images[0].url.startsWith(presignedApp.baseUrl)).toBe(true);
  });

  it('the store down while a client fetches: 503 with Retry-After, never a 500; served again once it is back', async () => {
    const url = (await read(s3App, newJob)).images[0].url;
    await s3.stop();
    try {
      const res = await fetch(url);
      expect(res.status).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await res.json()).toMatchObject({ code: 'image_store_unavailable', error: 'Image storage temporarily unavailable' });
    } finally {
      await s3.start();
    }
    expect((await bytes(url)).length).toBeGreaterThan(0);
  });

  it('the store down while a worker stores: retried as a provider failure, then failed and refunded; never stuck running', async () => {
    await s3.stop();
    try {
      const before = (await s3App.services.credits.getAccount(alice.accountId))!.credits;
      const jobId = await start(s3App, ['nowhere to put it']);
      const job = await final(s3App, jobId);
      expect(job).toMatchObject({ status: 'failed', failedImages: 1, creditsRefunded: 1 });
      expect(job.images[0].error).toBe('Image storage unavailable');
      const doc = await s3App.connection.db!.collection('jobs').findOne({ _id: jobId as never });
      expect(doc!.images[0].attempt).toBe(2);
      await until(async () => (await s3App.services.credits.getAccount(alice.accountId))!.credits === before, 'refund');
    } finally {
      await s3.start();
    }
  });
});
