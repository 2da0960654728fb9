import { AppError } from '../errors.js';
import type { ImageStore, StoredImage, StoredImageInfo } from '../../storage/types.js';
import type { JobStore } from './records.js';
import { parseCanonicalUint, type ImageUrlSigner } from './signed-urls.js';
import { isJobId } from './validation.js';
import { isExpired } from './view.js';

/** Far above any prompt limit; bounds the parse. */
const INDEX_MAX_DIGITS = 6;

/**
 * Serving stored images by signed URL. The signature is the authority (no API key): it names the job,
 * the image and the expiry, so a URL opens exactly one image until it expires.
 */
export class ImageFiles {
  constructor(private readonly deps: { jobs: JobStore; images: ImageStore; signer: ImageUrlSigner; retentionMs: number }) {}

  /** Checks the URL and returns the image's metadata (enough to answer a conditional request). */
  async stat(jobId: string, index: string, expires: unknown, sig: unknown): Promise<StoredImageInfo> {
    // Image indexes are written in canonical decimal only: `00` or `+0` names no image, as `abc` does not.
    const idx = parseCanonicalUint(index, INDEX_MAX_DIGITS);
    if (!isJobId(jobId) || idx === undefined) throw new AppError('image_not_found');
    if (this.deps.signer.verify(jobId, idx, expires, sig) !== 'valid') throw new AppError('invalid_signature');
    const job = await this.deps.jobs.findById(jobId);
    const image = job?.images.find((i) => i.index === idx);
    if (image?.status === 'succeeded' && isExpired(image, this.deps.retentionMs, new Date())) throw new AppError('image_expired');
    if (!image || image.status !== 'succeeded' || !image.fileId) throw new AppError('image_not_found');
    const info = await unavailableIfThrows(this.deps.images.stat(image.fileId));
    if (!info) throw new AppError('image_not_found');
    return info;
  }

  async read(info: StoredImageInfo): Promise<StoredImage> {
    const file = await unavailableIfThrows(this.deps.images.get(info.fileId));
    if (!file) throw new AppError('image_not_found');
    return file;
  }
}

/** A store that fails to answer (not one that answers "no such file") is a 503 with Retry-After. */
async function unavailableIfThrows<T>(pending: Promise<T>): Promise<T> {
  try {
    return await pending;
  } catch (err) {
    throw new AppError('image_store_unavailable', { cause: err });
  }
}
