import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';

// Size, format, seed and negative prompt end to end with the built-in provider: REST and GraphQL,
// validated against what the deployment offers, echoed on the job, and decoded from the bytes served.
let t: TestApp;
let worker: RunningWorker;
let alice: TestAccount;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'images-options-'));
  t = await startTestApp({ IN_PROCESS_WORKER: 'false', IMAGE_STORE: 'fs', IMAGE_DIR: dir, QUEUE_POLL_INTERVAL_MS: '50' });
  worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
  alice = await t.createAccountWithKey({ credits: 200 });
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const post = (body: unknown) =>
  fetch(`${t.baseUrl}/api/playground/images`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth(alice.key) }, body: JSON.stringify(body) });
const getJob = async (jobId: string) => (await fetch(`${t.baseUrl}/api/playground/images/${jobId}`, { headers: auth(alice.key) })).json();
const balance = async () => (await t.services.credits.getAccount(alice.accountId))!.credits;
const gql = async (query: string, variables: Record<string, unknown> = {}) =>
  (await fetch(`${t.baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth(alice.key) }, body: JSON.stringify({ query, variables }) })).json();

async function finished(jobId: string) {
  return until(async () => {
    const job = await getJob(jobId);
    return ['completed', 'failed'].includes(job.status) && job;
  }, `job ${jobId} final`);
}

/** Starts a job, waits for it, and fetches every image: the job and each image's bytes and type. */
async function run(body: Record<string, unknown>) {
  const res = await post(body);
  expect(res.status, await res.clone().text()).toBe(201);
  const job = await finished((await res.json()).jobId);
  expect(job.status).toBe('completed');
  const files = [];
  for (const image of job.images) {
    const file = await fetch(image.url);
    expect(file.status).toBe(200);
    files.push({ type: file.headers.get('content-type'), data: Buffer.from(await file.arrayBuffer()) });
  }
  return { job, files };
}

describe('what the deployment offers', () => {
  it('GET /api/playground/images/options and GraphQL imageOptions say the same', async () => {
    const res = await fetch(`${t.baseUrl}/api/playground/images/options`, { headers: auth(alice.key) });
    expect(res.status).toBe(200);
    const offer = await res.json();
    expect(offer).toMatchObject({ defaultSize: '256x256', formats: ['png', 'webp', 'jpeg'], seed: true, negativePrompt: true });
    expect(offer.sizes).toEqual(expect.arrayContaining(['256x256', '512x512', '1024x1024']));
    const { data } = await gql('{ imageOptions { sizes defaultSize formats seed negativePrompt } }');
    expect(data.imageOptions).toEqual({ ...offer, formats: ['PNG', 'WEBP', 'JPEG'] });
    expect((await fetch(`${t.baseUrl}/api/playground/images/options`)).status).toBe(401);
  });
});

describe('the OpenAPI document', () => {
  it('describes the options, the offer and the new job and image fields', async () => {
    const doc = await (await fetch(`${t.baseUrl}/openapi.json`)).json();
    const body = doc.paths['/api/playground/images'].post.requestBody.content['application/json'].schema;
    expect(JSON.stringify(body.properties.size)).toContain('512x512');
    expect(JSON.stringify(body.properties.format)).toContain('webp');
    expect(Object.keys(body.properties)).toEqual(expect.arrayContaining(['prompts', 'size', 'format', 'seed', 'negativePrompt']));
    const offer = doc.paths['/api/playground/images/options'].get.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(offer)).toContain('defaultSize');
    const job = JSON.stringify(doc.paths['/api/playground/images/{jobId}'].get.responses['200']);
    for (const field of ['options', 'negativePrompt', 'contentType', 'width', 'height', 'expired']) expect(job).toContain(`"${field}"`);
    const file = doc.paths['/api/playground/images/{jobId}/images/{index}'].get.responses;
    expect(Object.keys(file)).toEqual(expect.arrayContaining(['410', '503']));
  });
});

describe('options on REST', () => {
  it('draws each size in each format, echoes the options and describes every image', async () => {
    for (const [size, format, mime] of [
      ['512x512', 'webp', 'image/webp'],
      ['1024x576', 'jpeg', 'image/jpeg'],
      ['256x256', 'png', 'image/png'],
    ] as const) {
      const before = await balance();
      const { job, files } = await run({ prompts: ['a lighthouse', 'a kite'], size, format, seed: 41, negativePrompt: 'circles' });
      expect(await balance()).toBe(before - 2);
      expect(job.creditsUsed).toBe(2);
      expect(job.options).toEqual({ size, format, seed: 41, negativePrompt: 'circles' });
      const [width, height] = size.split('x').map(Number);
      expect(job.images.map((i: { seed: number }) => i.seed)).toEqual([41, 42]);
      for (const [i, image] of job.images.entries()) {
        expect(image).toMatchObject({ width, height, contentType: mime, expired: false });
        expect(files[i]!.type).toBe(mime);
        const meta = await sharp(files[i]!.data).metadata();
        expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({ format: format === 'jpeg' ? 'jpeg' : format, width, height });
      }
    }
  });

  it('defaults: 256x256 PNG, no seed, no negative prompt', async () => {
    const { job, files } = await run({ prompts: ['a plain request'] });
    expect(job.options).toEqual({ size: '256x256', format: 'png', seed: null, negativePrompt: null });
    expect(job.images[0]).toMatchObject({ width: 256, height: 256, contentType: 'image/png', seed: null });
    expect((await sharp(files[0]!.data).metadata()).format).toBe('png');
  });

  it('same prompt, seed, size and format: the same bytes; another seed or a negative prompt: other bytes', async () => {
    const base = { prompts: ['a red fox in the snow'], size: '512x512', format: 'webp', seed: 1234 };
    const a = await run(base);
    const b = await run(base);
    const otherSeed = await run({ ...base, seed: 1235 });
    const negative = await run({ ...base, negativePrompt: 'red, triangles' });
    expect(a.files[0]!.data.equals(b.files[0]!.data)).toBe(true);
    expect(a.files[0]!.data.equals(otherSeed.files[0]!.data)).toBe(false);
    expect(a.files[0]!.data.equals(negative.files[0]!.data)).toBe(false);
  });

  it('400 for an option the deployment does not offer, naming the field and what is allowed; nothing charged', async () => {
    const before = await balance();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ size: '300x300' }, /^size must be one of 256x256, 512x512, 1024x1024/],
      [{ size: 512 }, /^size must be one of /],
      [{ format: 'gif' }, /^format must be one of png, webp, jpeg$/],
      [{ seed: -1 }, /^seed must be an integer from 0 to 2147483647$/],
      [{ seed: 2147483648 }, /^seed must be an integer from 0 to 2147483647$/],
      [{ seed: 1.5 }, /^seed must be an integer from 0 to 2147483647$/],
      [{ seed: '7' }, /^seed must be an integer/],
      [{ negativePrompt: 'x'.repeat(2001) }, /^negativePrompt must be at most 2000 characters/],
      [{ negativePrompt: 5 }, /^negativePrompt must be a string$/],
    ];
    for (const [options, message] of cases) {
      const res = await post({ prompts: ['never drawn'], ...options });
      const body = await res.json();
      expect(res.status, JSON.stringify(options)).toBe(400);
      expect(body.code).toBe('invalid_request');
      expect(body.error).toMatch(message);
    }
    expect(await balance()).toBe(before);
    const { data } = await gql('{ jobs(first: 100) { nodes { images { prompt } } } }');
    expect(JSON.stringify(data.jobs.nodes)).not.toContain('never drawn');
  });
});

describe('options on GraphQL', () => {
  it('generate(options:) makes the images asked for, and the job shows its options and each image', async () => {
    const before = await balance();
    const res = await gql(
      `mutation ($o: ImageOptionsInput) { generate(prompts: ["a heron", "a crane"], options: $o) { jobId creditsUsed job { id options { size format seed negativePrompt } } } }`,
      { o: { size: '512x512', format: 'JPEG', seed: 9, negativePrompt: 'squares' } },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.generate.creditsUsed).toBe(2);
    expect(res.data.generate.job.options).toEqual({ size: '512x512', format: 'JPEG', seed: 9, negativePrompt: 'squares' });
    expect(await balance()).toBe(before - 2);
    await finished(res.data.generate.jobId);
    const { data } = await gql(`query ($id: ID!) { job(id: $id) { images { url width height contentType seed expired } } }`, { id: res.data.generate.jobId });
    expect(data.job.images.map((i: { seed: number }) => i.seed)).toEqual([9, 10]);
    for (const image of data.job.images) {
      expect(image).toMatchObject({ width: 512, height: 512, contentType: 'image/jpeg', expired: false });
      const meta = await sharp(Buffer.from(await (await fetch(image.url)).arrayBuffer())).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 512, 512]);
    }
  });

  it('BAD_USER_INPUT for an option not offered, naming the field and what is allowed; nothing charged', async () => {
    const before = await balance();
    const bad = async (o: Record<string, unknown>) => {
      const res = await gql(`mutation ($o: ImageOptionsInput) { generate(prompts: ["never"], options: $o) { jobId } }`, { o });
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(res)).toBe('BAD_USER_INPUT');
      return String(res.errors[0].message);
    };
    expect(await bad({ size: '300x300' })).toMatch(/^size must be one of 256x256, 512x512, 1024x1024/);
    expect(await bad({ seed: -5 })).toMatch(/^seed must be an integer from 0 to 2147483647$/);
    // An unknown format does not fit the enum: GraphQL's own validation refuses it.
    expect(await bad({ format: 'GIF' })).toMatch(/ImageFormat/);
    expect(await balance()).toBe(before);
  });
});
