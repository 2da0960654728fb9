import { UnreachableCaseError } from '../errors.js';
import { CONTENT_TYPES, legacyOptions, parseSize, seedOf, type ImageOffer, type ImageOptions } from './options.js';
import type { ImageRecord, JobRecord } from './records.js';
import type { ImageUrlSigner } from './signed-urls.js';
import type { ImageView, JobView } from './types.js';

/** How a view names and ages images: their URL (signed, or the store's presigned one) and the retention. */
export interface ImageViewing {
  /** URL of a succeeded image's bytes. */
  urlOf(jobId: string, image: ImageRecord, now: Date): string;
  /** Images that succeeded this long ago are expired (IMAGE_RETENTION). */
  retentionMs: number;
  /** For jobs from before options: what they were drawn with. */
  offer: ImageOffer;
}

/** Presigned GET URLs of stored images, valid until `expires` (epoch seconds). */
export interface PresignedUrls {
  /** Makes the URLs of these files until `expires` available to `get`. */
  prepare(fileIds: readonly string[], expires: number): Promise<void>;
  get(fileId: string, expires: number): string | undefined;
}

/**
 * Viewing with the gateway's signed URLs for `baseUrl`, or the store's presigned ones where `presigned`
 * has them prepared (an image it has none for keeps the gateway's URL, which serves the same bytes).
 */
export function signedViewing(opts: { signer: ImageUrlSigner; baseUrl: string; offer: ImageOffer; retentionMs: number; presigned?: PresignedUrls }): ImageViewing {
  const { signer, baseUrl, presigned } = opts;
  return {
    offer: opts.offer,
    retentionMs: opts.retentionMs,
    urlOf: (jobId, image, at) => (image.fileId && presigned?.get(image.fileId, signer.expiryFor(at))) || signer.url(baseUrl, jobId, image.index, at),
  };
}

/** True once an image's bytes are (or are about to be) deleted by retention: it is served no more. */
export function isExpired(image: Pick<ImageRecord, 'status' | 'expiredAt' | 'finishedAt'>, retentionMs: number, now: Date): boolean {
  if (image.status !== 'succeeded') return false;
  return Boolean(image.expiredAt) || (image.finishedAt !== null && image.finishedAt.getTime() + retentionMs <= now.getTime());
}

/** The client's view of a stored job: contract fields only, image URLs signed for `baseUrl`. */
export function toJobView(job: JobRecord, viewing: ImageViewing, now = new Date()): JobView {
  const options = job.options ?? legacyOptions(viewing.offer);
  return {
    jobId: job.id,
    status: job.status,
    totalImages: job.totalImages,
    succeededImages: job.succeededImages,
    failedImages: job.failedImages,
    creditsUsed: job.creditsUsed,
    creditsRefunded: job.creditsRefunded,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    completedAt: job.completedAt ?? null,
    options,
    images: [...job.images].sort((a, b) => a.index - b.index).map((img) => toImageView(job.id, img, options, viewing, now)),
  };
}

function toImageView(jobId: string, img: ImageRecord, options: ImageOptions, viewing: ImageViewing, now: Date): ImageView {
  const size = parseSize(options.size);
  const common = {
    index: img.index,
    prompt: img.prompt,
    width: img.width ?? size?.width ?? 0,
    height: img.height ?? size?.height ?? 0,
    contentType: img.contentType ?? CONTENT_TYPES[options.format],
    seed: seedOf(options, img.index),
    expired: false,
  };
  const status = img.status;
  switch (status) {
    case 'succeeded':
      if (isExpired(img, viewing.retentionMs, now)) return { ...common, status, url: null, error: null, expired: true };
      return { ...common, status, url: viewing.urlOf(jobId, img, now), error: null };
    case 'failed':
      return { ...common, status, url: null, error: img.error ?? 'Image generation failed' };
    case 'queued':
      // An image released for a retry (a worker gave up its attempt) is still in progress to the client:
      // shown as `running`, so an image's status never goes back.
      return { ...common, status: img.attempt > 0 ? 'running' : 'queued', url: null, error: null };
    case 'running':
    case 'canceled':
      return { ...common, status, url: null, error: null };
    default:
      throw new UnreachableCaseError(status);
  }
}
