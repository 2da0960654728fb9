import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { PresignedUrls } from '../domain/jobs/view.js';
import { etagOf, objectName, parseObjectName } from './names.js';
import type { ImageKey, ImageStore, StoredImage, StoredImageInfo } from './types.js';

export const S3_PREFIX = 's3:';

export interface S3ImageStoreOptions {
  bucket: string;
  region: string;
  /** An S3-compatible store's address; unset: AWS. */
  endpoint?: string;
  forcePathStyle: boolean;
  /** Key prefix inside the bucket. */
  prefix: string;
  /**
   * when_required: no checksums unless an operation needs one. Recent SDKs otherwise send uploads with
   * aws-chunked framing and trailing checksums, which some S3-compatible stores keep verbatim (corrupting
   * the object) or reject.
   */
  checksums: 'when_supported' | 'when_required';
  /** Credentials; unset: the SDK's standard chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, profiles, roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Per request; a store that does not answer fails the call instead of holding it. */
  timeoutMs?: number;
}

/** Entries kept of presigned URLs before the cache starts over (each lives until its hour ends). */
const MAX_PRESIGNED = 10_000;

/**
 * Images as objects of an S3 bucket (IMAGE_STORE=s3), on AWS or any S3-compatible store. Also makes
 * presigned GET URLs (IMAGE_URL_MODE=presigned), so clients fetch the bytes from the store itself.
 */
export class S3ImageStore implements ImageStore {
  readonly client: S3Client;

  constructor(private readonly options: S3ImageStoreOptions) {
    const checksums = options.checksums === 'when_required' ? 'WHEN_REQUIRED' : 'WHEN_SUPPORTED';
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      credentials: options.credentials,
      requestChecksumCalculation: checksums,
      responseChecksumValidation: checksums,
      // The runner retries a failed store as it retries a provider: one SDK retry is enough here.
      maxAttempts: 2,
      requestHandler: { connectionTimeout: Math.min(timeoutMs, 3000), requestTimeout: timeoutMs },
    });
  }

  async put(key: ImageKey, image: { data: Buffer; contentType: string }): Promise<StoredImageInfo> {
    const name = objectName(key, image);
    // A buffer with its length: the SDK sends it as one plain body (aws-chunked framing is for streams).
    await this.client.send(
      new PutObjectCommand({ Bucket: this.options.bucket, Key: this.keyOf(name), Body: image.data, ContentType: image.contentType, ContentLength: image.data.length }),
    );
    return { fileId: S3_PREFIX + name, contentType: image.contentType, length: image.data.length, etag: etagOf(image.data) };
  }

  async stat(fileId: string): Promise<StoredImageInfo | null> {
    const name = this.nameOf(fileId);
    if (!name) return null;
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: this.keyOf(name.name) }));
      return { fileId, length: head.ContentLength ?? 0, contentType: name.contentType, etag: name.etag };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async get(fileId: string): Promise<StoredImage | null> {
    const name = this.nameOf(fileId);
    if (!name) return null;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key: this.keyOf(name.name) }));
      const data = Buffer.from(await res.Body!.transformToByteArray());
      return { fileId, length: data.length, data, contentType: name.contentType, etag: name.etag };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async delete(fileId: string): Promise<void> {
    const name = this.nameOf(fileId);
    // Deleting a missing object succeeds in S3: deleting twice is harmless.
    if (name) await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.keyOf(name.name) }));
  }

  private keyOf(name: string): string {
    return this.options.prefix + name;
  }

  private nameOf(fileId: string): { name: string; contentType: string; etag: string } | null {
    if (!fileId.startsWith(S3_PREFIX)) return null;
    const name = fileId.slice(S3_PREFIX.length);
    const parsed = parseObjectName(name);
    return parsed ? { name, ...parsed } : null;
  }

  /** Presigned GET URLs of this store's images (IMAGE_URL_MODE=presigned). */
  presigner(): PresignedUrls {
    const cache = new Map<string, string>();
    return {
      prepare: async (fileIds, expires) => {
        const now = Math.floor(Date.now() / 1000);
        if (cache.size > MAX_PRESIGNED) cache.clear();
        for (const fileId of fileIds) {
          const name = this.nameOf(fileId);
          const entry = `${expires}|${fileId}`;
          if (!name || cache.has(entry)) continue;
          const command = new GetObjectCommand({ Bucket: this.options.bucket, Key: this.keyOf(name.name) });
          // Valid as long as the gateway's own signed URL would be (S3 allows at most 7 days).
          const expiresIn = Math.max(1, Math.min(expires - now, 7 * 24 * 3600));
          cache.set(entry, await getSignedUrl(this.client, command, { expiresIn }));
        }
      },
      get: (fileId, expires) => cache.get(`${expires}|${fileId}`),
    };
  }
}

function isMissing(err: unknown): boolean {
  if (!(err instanceof S3ServiceException)) return false;
  return err.name === 'NotFound' || err.name === 'NoSuchKey' || err.$metadata?.httpStatusCode === 404;
}
