import { join } from 'node:path';
import type { Db } from 'mongodb';
import { imageStoreKind, type Config } from '../config.js';
import type { PresignedUrls } from '../domain/jobs/view.js';
import { FsImageStore } from './fs.js';
import { GridFsImageStore } from './gridfs.js';
import { RoutingImageStore } from './routing.js';
import { S3ImageStore } from './s3.js';
import type { ImageStore } from './types.js';

export * from './types.js';
export { GridFsImageStore } from './gridfs.js';
export { FsImageStore } from './fs.js';
export { S3ImageStore } from './s3.js';

export interface ConfiguredImageStore {
  store: ImageStore;
  /** IMAGE_URL_MODE=presigned: the store's presigned URLs. */
  presigned?: PresignedUrls;
}

/** The store IMAGE_STORE selects for new images, reading earlier images wherever they were stored. */
export function openImageStore(config: Config, db: Db): ConfiguredImageStore {
  const kind = imageStoreKind(config);
  const gridfs = new GridFsImageStore(db);
  const fs = new FsImageStore(config.IMAGE_DIR ?? join(config.DATA_DIR, 'images'));
  const s3 = config.S3_BUCKET
    ? new S3ImageStore({
        bucket: config.S3_BUCKET,
        region: config.S3_REGION,
        endpoint: config.S3_ENDPOINT,
        forcePathStyle: config.S3_FORCE_PATH_STYLE,
        prefix: config.S3_PREFIX,
        checksums: config.S3_CHECKSUMS ?? (config.S3_ENDPOINT ? 'when_required' : 'when_supported'),
        credentials:
          config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY ? { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } : undefined,
      })
    : undefined;
  const primary = kind === 'fs' ? fs : kind === 'gridfs' ? gridfs : s3!;
  const presigned = config.IMAGE_URL_MODE === 'presigned' && s3 ? s3.presigner() : undefined;
  return { store: new RoutingImageStore(primary, { fs, gridfs, s3 }), presigned };
}
