/** Job and image states of the contract. Exhaustive switches over them end in UnreachableCaseError. */
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'canceled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const IMAGE_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;
export type ImageStatus = (typeof IMAGE_STATUSES)[number];

export type FinalJobStatus = Extract<JobStatus, 'completed' | 'failed' | 'canceled'>;
export const FINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set<FinalJobStatus>(['completed', 'failed', 'canceled']);

/** One image of a job as clients see it (REST GET, GraphQL `job`, `jobStatus`). */
export interface ImageView {
  index: number;
  prompt: string;
  status: ImageStatus;
  /** Signed, expiring URL; null until the image succeeded. */
  url: string | null;
  error: string | null;
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
  images: ImageView[];
}

/** Response of starting a job (REST POST, GraphQL `generate`). */
export interface JobCreated {
  jobId: string;
  totalImages: number;
  creditsUsed: number;
  credits: number;
}
