import type { ChargeHolder } from '../principal.js';
import type { UsageTag } from '../usage/types.js';
import type { ImageOptions } from './options.js';
import type { FinalJobStatus, ImageStatus, JobStatus } from './types.js';

/** Refund state of one image: a failed or canceled image moves none → pending → done, each step once. */
export type RefundState = 'none' | 'pending' | 'done';

/** One image of a stored job (the `images` array of a `jobs` document). */
export interface ImageRecord {
  index: number;
  prompt: string;
  status: ImageStatus;
  /** Number of times a worker claimed this image; guards every later state change of the image. */
  attempt: number;
  /** The stored bytes (ImageStore's id); null until succeeded, and again once retention deleted them. */
  fileId: string | null;
  /** Of the stored bytes, set on success; absent on images stored before options existed (PNG). */
  contentType?: string;
  width?: number;
  height?: number;
  /** Set once, by the retention sweep that deletes the bytes (so only one sweep deletes them). */
  expiredAt?: Date | null;
  error: string | null;
  refund: RefundState;
  startedAt: Date | null;
  /** Last sign of life of the worker running the current attempt; older than the lock lifetime = abandoned. */
  heartbeatAt: Date | null;
  finishedAt: Date | null;
}

/** A stored job (`jobs` collection; `id` is the document's `_id`). */
export interface JobRecord {
  id: string;
  accountId: string;
  /** The API key that started the job; null when a console user did (the playground). */
  keyId: string | null;
  status: JobStatus;
  totalImages: number;
  succeededImages: number;
  failedImages: number;
  /** Images canceled before they started (each refunded); not a contract field, the finalize rule counts them. */
  canceledImages: number;
  creditsUsed: number;
  creditsRefunded: number;
  /**
   * Set once by a cancel: from then on no image of the job is claimed, and the job ends `canceled`
   * once nothing runs. Null while no one asked.
   */
  cancelRequestedAt: Date | null;
  /** False between insert and a confirmed charge: such jobs are invisible and reconciled by the sweep. */
  charged: boolean;
  /**
   * Set (once, guarded on `charged: false`) by whoever withdraws the job; a withdrawing job can never be
   * marked charged, so a withdrawal and the create request's own acceptance cannot both succeed.
   */
  withdrawing?: boolean;
  /** The idempotent request that created it (its `ref`), so a retry with the same key finds it. */
  request?: string;
  /** Size, format, seed and negative prompt, defaults filled in; absent on jobs from before options. */
  options?: ImageOptions;
  /**
   * When the oldest image whose bytes are still stored succeeded: the retention sweep's index. Absent
   * while nothing is stored, and on jobs from before retention (the sweep finds those by completedAt,
   * once: `retentionSwept`).
   */
  oldestStoredAt?: Date;
  retentionSwept?: boolean;
  images: ImageRecord[];
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  /**
   * Set at insert, cleared once the job's webhook event is published: whatever update makes the job
   * final makes its event due (see MongoJobEventOutbox). Absent on jobs from before webhooks.
   */
  eventPending?: boolean;
}

/** A job's own fields, without its images. */
export type JobSummary = Omit<JobRecord, 'images'>;

/**
 * What a per-image state change reports: the job's status and counters after it, and that one image
 * (not the whole images array: a worker needs no more, and a large job would cost every update).
 */
export interface ImageTransition {
  job: JobSummary;
  image: ImageRecord;
}

/**
 * Persistence of jobs. Every state change is ONE guarded update (the condition names the state it
 * moves from), so concurrent workers and sweeps cannot both apply it; methods that can lose such a
 * race return null/false instead of throwing.
 */
export interface JobStore {
  insert(job: JobRecord): Promise<void>;
  /** Deletes the job only while it is uncharged. */
  deleteUncharged(jobId: string): Promise<boolean>;
  /** uncharged → charged, unless a withdrawal has begun. */
  markCharged(jobId: string, now: Date): Promise<boolean>;
  /** Marks an uncharged job as being withdrawn (see `withdrawing`); false when it is charged or gone. */
  beginWithdrawal(jobId: string): Promise<boolean>;
  /** The account's jobs created under an idempotent request's `ref` (charged or not), oldest first. */
  findByRequest(accountId: string, ref: string): Promise<JobRecord[]>;

  /** Charged jobs of the account. */
  findForAccount(accountId: string, jobIds: readonly string[]): Promise<JobRecord[]>;
  /** Charged jobs of the account, newest first, strictly after the cursor position. */
  listForAccount(accountId: string, limit: number, after: { createdAt: Date; id: string } | null): Promise<JobRecord[]>;
  findById(jobId: string): Promise<JobRecord | null>;

  /**
   * Claims an image for a run: queued, or running with a heartbeat at or before `staleBefore`
   * (its worker died), of a job no one asked to cancel. Increments the attempt, sets running, heartbeat
   * `heartbeatAt`, and moves a queued job to running. Returns the job and image after the update, or
   * null when not claimable.
   */
  claimImage(jobId: string, index: number, now: Date, staleBefore: Date, heartbeatAt: Date): Promise<ImageTransition | null>;
  heartbeat(jobId: string, index: number, attempt: number, at: Date): Promise<boolean>;
  /**
   * running(attempt) → succeeded with the stored bytes (and oldestStoredAt lowered to `now`); returns the
   * job and image after the update, null if the attempt is no longer current.
   */
  completeImage(jobId: string, index: number, attempt: number, stored: StoredImageRef, now: Date): Promise<ImageTransition | null>;
  /** running(attempt) → failed with refund pending; returns the job and image after the update or null. */
  failImage(jobId: string, index: number, attempt: number, error: string, now: Date): Promise<ImageTransition | null>;
  /** running(attempt) → queued, for a retry later; returns the job and image after the update or null. */
  releaseImage(jobId: string, index: number, attempt: number, error: string, now: Date): Promise<ImageTransition | null>;
  /** refund pending → done and creditsRefunded + 1; returns the job and image after the update or null. */
  markRefunded(jobId: string, index: number, now: Date): Promise<ImageTransition | null>;
  /**
   * queued/running → final status, once; sets completedAt. `canceled` only applies to a job with a
   * cancel requested, `completed` and `failed` only to one without, so a cancel landing between an
   * image's last update and this one cannot be overwritten. Returns the job after it, or null when
   * another caller finalized it (or the guard did not hold): exactly one caller sees each job end.
   */
  finalize(jobId: string, status: FinalJobStatus, now: Date): Promise<JobRecord | null>;

  /**
   * Asks to cancel a charged, non-final job of the account: sets `cancelRequestedAt` (once; a repeat
   * leaves the first). Returns the job after it, whatever its state (a final job is returned unchanged),
   * or null when the account has no such charged job.
   */
  requestCancel(jobId: string, accountId: string, now: Date): Promise<JobRecord | null>;
  /**
   * Of a job with a cancel requested: queued → canceled, or (with `staleBefore`) running with a heartbeat
   * at or before it (its worker died) → canceled; refund pending, canceledImages + 1. Returns the job and
   * image after the update, or null when the image was not in such a state (someone else moved it).
   */
  cancelImage(jobId: string, index: number, staleBefore: Date | null, now: Date): Promise<ImageTransition | null>;

  /** Sweep: uncharged jobs created before the cutoff. */
  findUncharged(createdBefore: Date, limit: number): Promise<JobRecord[]>;
  /** Sweep: charged, non-final jobs not updated since the cutoff. */
  findStalled(updatedBefore: Date, limit: number): Promise<JobRecord[]>;

  /**
   * Retention: jobs that may hold bytes of images that succeeded at or before `cutoff` (oldestStoredAt
   * at or before it, or a job from before retention completed at or before it).
   */
  findRetained(cutoff: Date, limit: number): Promise<JobRecord[]>;
  /**
   * Retention: marks a succeeded image expired, once: only while it still holds `fileId`, is not
   * expired and succeeded at or before `cutoff`. True for the one caller that marked it.
   */
  expireImage(jobId: string, index: number, fileId: string, cutoff: Date, now: Date): Promise<boolean>;
  /** Retention: the bytes of an expired image are gone: forgets its fileId. */
  forgetFile(jobId: string, index: number, fileId: string): Promise<void>;
  /**
   * Retention: sets oldestStoredAt (null: nothing stored any more, the job is swept), unless the job
   * changed since `updatedAt` (a later sweep redoes it).
   */
  setOldestStored(jobId: string, updatedAt: Date, oldest: Date | null): Promise<void>;
}

/** What completeImage records of the stored bytes. */
export interface StoredImageRef {
  fileId: string;
  contentType: string;
  width: number;
  height: number;
}

/** The credit operations jobs need; the gateway core's CreditService provides them (once per opId). */
export interface JobCredits {
  /**
   * Atomically deducts `amount`, counted as one call of `usage`; AppError insufficient_credits when the
   * balance is too low. Returns the new balance.
   */
  /** `holder`: the calling key, whose credit limit (if any) must allow the charge too (key_credit_limit). */
  charge(accountId: string, amount: number, opId: string, usage: UsageTag, holder?: ChargeHolder): Promise<number>;
  /** Gives `amount` back, counted as refunded credits of `usage`. */
  refund(accountId: string, amount: number, opId: string, audit: { jobId: string; index?: number; keyId: string | null; reason: string }, usage: UsageTag): Promise<unknown>;
  /** Makes sure `opId` will never apply; tells whether it already had. */
  voidOp(accountId: string, opId: string): Promise<'voided' | 'already_applied'>;
  /** The job now records the outcome of `opId` (charged, refunded): the account may forget the id. */
  settle(accountId: string, opId: string): Promise<void>;
  /** The balance now (an answer that adopts a job charged by an earlier attempt reports it). */
  getAccount(accountId: string): Promise<{ credits: number } | null>;
}

/** The work queue: one entry per image. */
export interface ImageWorkQueue {
  enqueue(jobId: string, indexes: readonly number[]): Promise<void>;
  /** Indexes of the job that still have a live queue entry (scheduled or running). */
  queuedIndexes(jobId: string): Promise<Set<number>>;
}

/**
 * Changes to jobs as they are stored, from whichever process made them (the gateway's job events: a
 * change stream or a poll). Listeners get the stored record; who may see it is decided by the watcher.
 */
export interface JobChangeFeed {
  /** Calls `listener` with the job after each of its changes, until the returned function is called. */
  subscribe(jobId: string, listener: (job: JobRecord) => void): () => void;
  /** Resolves once changes are being watched: every change committed after that is delivered. */
  ready(): Promise<void>;
}
