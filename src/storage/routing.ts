import { FS_PREFIX } from './fs.js';
import { S3_PREFIX } from './s3.js';
import type { ImageKey, ImageStore, StoredImage, StoredImageInfo } from './types.js';

/**
 * New images go to the configured store; each existing image is read from the store its id names
 * (`fs:…`, `s3:…`, or a GridFS ObjectId as every image before IMAGE_STORE had), so switching stores
 * keeps every earlier job's images readable without migrating them.
 */
export class RoutingImageStore implements ImageStore {
  constructor(
    private readonly primary: ImageStore,
    private readonly stores: { fs?: ImageStore; s3?: ImageStore; gridfs?: ImageStore },
  ) {}

  put(key: ImageKey, image: { data: Buffer; contentType: string }): Promise<StoredImageInfo> {
    return this.primary.put(key, image);
  }

  async stat(fileId: string): Promise<StoredImageInfo | null> {
    return (await this.storeOf(fileId)?.stat(fileId)) ?? null;
  }

  async get(fileId: string): Promise<StoredImage | null> {
    return (await this.storeOf(fileId)?.get(fileId)) ?? null;
  }

  async delete(fileId: string): Promise<void> {
    await this.storeOf(fileId)?.delete(fileId);
  }

  private storeOf(fileId: string): ImageStore | undefined {
    if (fileId.startsWith(FS_PREFIX)) return this.stores.fs;
    if (fileId.startsWith(S3_PREFIX)) return this.stores.s3;
    return this.stores.gridfs;
  }
}
