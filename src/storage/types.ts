/**
 * Where generated images live. The default is MongoDB GridFS, so images share the deployment's database
 * and every gateway instance can serve every image; the interface keeps an object store possible.
 */
export interface ImageKey {
  jobId: string;
  index: number;
  /** Generation attempt that produced the bytes; a losing attempt's file is deleted by id. */
  attempt: number;
}

export interface StoredImageInfo {
  /** Opaque id, kept on the job's image entry. */
  fileId: string;
  contentType: string;
  length: number;
  /** Strong validator for HTTP caching: derived from the bytes. */
  etag: string;
}

export interface StoredImage extends StoredImageInfo {
  data: Buffer;
}

export interface ImageStore {
  put(key: ImageKey, image: { data: Buffer; contentType: string }): Promise<StoredImageInfo>;
  /** Metadata only (cheap): for conditional requests. Null when there is no such file. */
  stat(fileId: string): Promise<StoredImageInfo | null>;
  get(fileId: string): Promise<StoredImage | null>;
  delete(fileId: string): Promise<void>;
}
