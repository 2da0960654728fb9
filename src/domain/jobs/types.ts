/** Job and image states of the contract. Exhaustive switches over them end in UnreachableCaseError. */
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'canceled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const IMAGE_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;
export type ImageStatus = (typeof IMAGE_STATUSES)[number];

export type FinalJobStatus = Extract<JobStatus, 'completed' | 'failed' | 'canceled'>;
export const FINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set<FinalJobStatus>(['completed', 'failed', 'canceled']);

import type { ImageOptions } from './options.js';

/** One image of a job as clients see it (REST GET, GraphQL `job`, `jobStatus`). */
export interface ImageView {
  index: number;
  prompt: string;
  status: ImageStatus;
  /** Signed, expiring URL; null until the image succeeded, and once it expired. */
  url: string | null;
  error: string | null;
  width: number;
  height: number;
  contentType: string;
  /** The seed it was (or will be) drawn with: the job's seed + index; null without one. */
  seed: number | null;
  /** Older than IMAGE_RETENTION: its bytes are deleted and `url` is null. */
  expired: boolean;
}

/** The job as clients see it: exactly the contract's fields, the same for REST and GraphQL. */
export interface JobView {
  jobId: string;
  status: JobStatus;
  totalImages: number;
  succeededImages: number;
  failedImages: number;
  creditsUsed: number;
  creditsRefunded: number;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  options: ImageOptions;
  images: ImageView[];
}

/** Response of starting a job (REST POST, GraphQL `generate`). */
export interface JobCreated {
  jobId: string;
  totalImages: number;
  creditsUsed: number;
  credits: number;
}
