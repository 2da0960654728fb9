import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import mongoose, { type Connection } from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FsImageStore } from '../../src/storage/fs.js';
import { GridFsImageStore } from '../../src/storage/gridfs.js';
import { RoutingImageStore } from '../../src/storage/routing.js';
import { S3ImageStore } from '../../src/storage/s3.js';
import type { ImageStore } from '../../src/storage/types.js';
import { BuiltinImageProvider } from '../../src/providers/images/builtin.js';
import { startS3, type S3StandIn } from '../helpers/s3.js';

// Each image store on its own: the bytes put are the bytes read back, stat answers type and validator,
// delete is idempotent, and a name that is not one of the store's reaches nothing.
let connection: Connection;
let dir: string;
let s3: S3StandIn;
let image: { data: Buffer; contentType: string };

const s3Store = (checksums: 'when_required' | 'when_supported') =>
  new S3ImageStore({
    bucket: s3.bucket,
    region: 'us-east-1',
    endpoint: s3.endpoint,
    forcePathStyle: true,
    prefix: 'images/',
    checksums,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });

beforeAll(async () => {
  const uri = new URL(inject('mongoUri'));
  uri.pathname = `/image_stores_${process.pid}`;
  connection = await mongoose.createConnection(uri.toString(), { serverSelectionTimeoutMS: 5000 }).asPromise();
  dir = await mkdtemp(join(tmpdir(), 'image-stores-'));
  s3 = await startS3();
  image = await new BuiltinImageProvider().generate('a stored heron', { format: 'webp', size: { width: 512, height: 512 } });
});

afterAll(async () => {
  await connection?.dropDatabase().catch(() => undefined);
  await connection?.close();
  await s3?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.each([
  ['fs', () => new FsImageStore(dir)],
  ['gridfs', () => new GridFsImageStore(connection.db!)],
  ['s3 (s3rver on loopback)', () => s3Store('when_required')],
] as [string, () => ImageStore][])('%s', (_name, make) => {
  it('round-trips the exact bytes; stat, get and delete by the id it returned', async () => {
    const store = make();
    const key = { jobId: randomUUID(), index: 3, attempt: 1 };
    const put = await store.put(key, image);
    expect(put).toMatchObject({ contentType: 'image/webp', length: image.data.length });
    expect(put.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(await store.stat(put.fileId)).toEqual(put);
    const got = await store.get(put.fileId);
    expect(got!.data.equals(image.data)).toBe(true);
    expect(got).toMatchObject({ contentType: 'image/webp', etag: put.etag });
    await store.delete(put.fileId);
    expect(await store.stat(put.fileId)).toBeNull();
    expect(await store.get(put.fileId)).toBeNull();
    await store.delete(put.fileId);
  });

  it('names that are not its own reach nothing', async () => {
    const store = make();
    for (const id of ['', 'fs:../../etc/passwd', 's3:../x', 'fs:nope', '0'.repeat(24), 'zz']) {
      expect(await store.stat(id)).toBeNull();
      expect(await store.get(id)).toBeNull();
    }
  });
});

describe('s3 checksums', () => {
  it('stores the bytes as sent with either setting: the body goes with its length, never aws-chunked framing', async () => {
    const key = { jobId: randomUUID(), index: 0, attempt: 1 };
    const required = s3Store('when_required');
    const ok = await required.put(key, image);
    const raw = await required.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `images/${ok.fileId.slice(3)}` }));
    expect(Buffer.from(await raw.Body!.transformToByteArray()).equals(image.data)).toBe(true);

    // The SDK's default (checksums computed and sent): read back by a client that validates none.
    const supported = s3Store('when_supported');
    const checked = await supported.put({ ...key, attempt: 2 }, image);
    expect((await required.get(checked.fileId))!.data.equals(image.data)).toBe(true);
    expect((await supported.get(checked.fileId))!.data.equals(image.data)).toBe(true);
  });
});

describe('routing: new images to the configured store, earlier ones read where they are', () => {
  it('reads a GridFS image and an fs image through an s3-primary store, and writes to s3', async () => {
    const gridfs = new GridFsImageStore(connection.db!);
    const fs = new FsImageStore(dir);
    const s3Primary = s3Store('when_required');
    const old = await gridfs.put({ jobId: randomUUID(), index: 0, attempt: 1 }, image);
    const earlier = await fs.put({ jobId: randomUUID(), index: 0, attempt: 1 }, image);
    const routing = new RoutingImageStore(s3Primary, { gridfs, fs, s3: s3Primary });
    expect((await routing.get(old.fileId))!.data.equals(image.data)).toBe(true);
    expect((await routing.get(earlier.fileId))!.data.equals(image.data)).toBe(true);
    const fresh = await routing.put({ jobId: randomUUID(), index: 1, attempt: 1 }, image);
    expect(fresh.fileId.startsWith('s3:')).toBe(true);
    expect((await s3Primary.get(fresh.fileId))!.data.equals(image.data)).toBe(true);
  });
});
