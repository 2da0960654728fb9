import { createHash } from 'node:crypto';
import { GridFSBucket, ObjectId, type Db } from 'mongodb';
import type { ImageKey, ImageStore, StoredImage, StoredImageInfo } from './types.js';

interface ImageFileMetadata {
  jobId: string;
  index: number;
  attempt: number;
  contentType: string;
  etag: string;
}

/** Images in MongoDB GridFS (bucket `images`): every instance sharing the database can serve every image. */
export class GridFsImageStore implements ImageStore {
  private readonly bucket: GridFSBucket;

  constructor(private readonly db: Db, bucketName = 'images') {
    this.bucket = new GridFSBucket(db, { bucketName });
  }

  async put(key: ImageKey, image: { data: Buffer; contentType: string }): Promise<StoredImageInfo> {
    const etag = `"${createHash('sha256').update(image.data).digest('base64url').slice(0, 27)}"`;
    const metadata: ImageFileMetadata = { ...key, contentType: image.contentType, etag };
    const upload = this.bucket.openUploadStream(`${key.jobId}/${key.index}`, { metadata });
    await new Promise<void>((resolve, reject) => {
      upload.once('error', reject);
      upload.once('finish', () => resolve());
      upload.end(image.data);
    });
    return { fileId: upload.id.toHexString(), contentType: image.contentType, length: image.data.length, etag };
  }

  async stat(fileId: string): Promise<StoredImageInfo | null> {
    const id = toObjectId(fileId);
    if (!id) return null;
    const [file] = await this.bucket.find({ _id: id }, { limit: 1 }).toArray();
    if (!file) return null;
    const meta = file.metadata as ImageFileMetadata | undefined;
    return {
      fileId,
      length: file.length,
      contentType: meta?.contentType ?? 'application/octet-stream',
      etag: meta?.etag ?? `"${file._id.toHexString()}"`,
    };
  }

  async get(fileId: string): Promise<StoredImage | null> {
    const info = await this.stat(fileId);
    if (!info) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of this.bucket.openDownloadStream(new ObjectId(fileId))) chunks.push(chunk as Buffer);
    return { ...info, data: Buffer.concat(chunks) };
  }

  async delete(fileId: string): Promise<void> {
    const id = toObjectId(fileId);
    if (!id) return;
    await this.bucket.delete(id).catch((err: unknown) => {
      // Already gone is fine: deleting is only ever cleanup of a losing attempt.
      if (!/FileNotFound|not found/i.test(String((err as Error)?.message))) throw err;
    });
  }
}

function toObjectId(id: string): ObjectId | null {
  return /^[0-9a-f]{24}$/i.test(id) ? new ObjectId(id) : null;
}
