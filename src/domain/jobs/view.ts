import { UnreachableCaseError } from '../errors.js';
import type { ImageRecord, JobRecord } from './records.js';
import type { ImageUrlSigner } from './signed-urls.js';
import type { ImageView, JobView } from './types.js';

/** The client's view of a stored job: contract fields only, image URLs signed for `baseUrl`. */
export function toJobView(job: JobRecord, signer: ImageUrlSigner, baseUrl: string, now = new Date()): JobView {
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
    images: [...job.images].sort((a, b) => a.index - b.index).map((img) => toImageView(job.id, img, signer, baseUrl, now)),
  };
}

function toImageView(jobId: string, img: ImageRecord, signer: ImageUrlSigner, baseUrl: string, now: Date): ImageView {
  const status = img.status;
  switch (status) {
    case 'succeeded':
      return { index: img.index, prompt: img.prompt, status, url: signer.url(baseUrl, jobId, img.index, now), error: null };
    case 'failed':
      return { index: img.index, prompt: img.prompt, status, url: null, error: img.error ?? 'Image generation failed' };
    case 'queued':
      // An image released for a retry (a worker gave up its attempt) is still in progress to the client:
      // shown as `running`, so an image's status never goes back.
      return { index: img.index, prompt: img.prompt, status: img.attempt > 0 ? 'running' : 'queued', url: null, error: null };
    case 'running':
    case 'canceled':
      return { index: img.index, prompt: img.prompt, status, url: null, error: null };
    default:
      throw new UnreachableCaseError(status);
  }
}
