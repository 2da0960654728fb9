import { randomUUID } from 'node:crypto';
import { AppError, invalid, isAppError } from '../errors.js';
import type { IdempotentAttempt } from '../idempotency/service.js';
import { costOf } from '../operations/catalog.js';
import type { ImageJobService, JobPage, JobUrlContext } from '../ports.js';
import { sourceOf, type Principal } from '../principal.js';
import type { ImageWorkQueue, JobCredits, JobRecord, JobStore } from './records.js';
import { JobSettlement } from './settlement.js';
import type { ImageUrlSigner } from './signed-urls.js';
import type { JobCreated, JobView } from './types.js';
import { parseImageOptions, type ImageOffer } from './options.js';
import { isJobId, parsePrompts, type PromptLimits } from './validation.js';
import { signedViewing, toJobView, type PresignedUrls } from './view.js';

export interface ImageJobServiceDeps {
  jobs: JobStore;
  credits: JobCredits;
  queue: ImageWorkQueue;
  signer: ImageUrlSigner;
  limits: PromptLimits;
  /** What the image provider offers: requests are validated against it. */
  offer: ImageOffer;
  /** IMAGE_RETENTION: images that succeeded this long ago are expired. Default: 30 days. */
  retentionMs?: number;
  /**
   * Presigned URLs of the image store (IMAGE_URL_MODE=presigned): prepared before a view is built,
   * then read synchronously; an image it has none for gets the gateway's signed URL.
   */
  presigned?: PresignedUrls;
  /** Overrides the per-request base address of image URLs (PUBLIC_BASE_URL). */
  publicBaseUrl?: string;
  /** Failures that do not fail the request (an enqueue the sweep will redo). */
  onBackgroundError?: (err: unknown) => void;
  /** Refunds and the end of jobs (cancel); default: one on `jobs` and `credits`. */
  settlement?: JobSettlement;
}

export const MAX_PAGE_SIZE = 100;

export const DEFAULT_RETENTION_MS = 30 * 24 * 3600 * 1000;


/** Charge operation id of a job: one charge per job, whatever retries or sweeps happen. */
export const jobChargeOpId = (jobId: string) => `job:${jobId}`;
/** Refund operation id of a withdrawn job's charge. */
export const jobWithdrawOpId = (jobId: string) => `withdraw:${jobId}`;

/**
 * Withdraws a job that was never accepted (its create request failed or died): its charge can never
 * apply from now on, and is given back if it did; then the job goes. Every step is once-per-op, so the
 * request itself and any number of sweeps may run it, concurrently or after a crash half way. A job
 * already accepted (marked charged) is left alone; once a withdrawal has begun, the job can no longer
 * be accepted (so a slow create request and a sweep never both win).
 */
export async function withdrawJob(
  deps: { jobs: Pick<JobStore, 'findById' | 'beginWithdrawal' | 'deleteUncharged'>; credits: JobCredits },
  job: { id: string; accountId: string; keyId: string | null; creditsUsed: number },
): Promise<'voided' | 'refunded' | 'accepted'> {
  // Not marked: charged (accepted), or gone (withdrawn already; the steps below are once-per-op).
  if (!(await deps.jobs.beginWithdrawal(job.id)) && (await deps.jobs.findById(job.id))?.charged) return 'accepted';
  const usage = { service: 'images', source: job.keyId ?? 'console' } as const;
  const outcome = await deps.credits.voidOp(job.accountId, jobChargeOpId(job.id));
  if (outcome === 'already_applied') {
    await deps.credits.refund(job.accountId, job.creditsUsed, jobWithdrawOpId(job.id), { jobId: job.id, keyId: job.keyId, reason: 'create_failed' }, usage);
  }
  // The refund's id is never settled: with the job gone, the account's record of it is all that stops
  // a second withdrawer (the request itself after a sweep, a retry with the key) from refunding again.
  await deps.jobs.deleteUncharged(job.id);
  return outcome === 'voided' ? 'voided' : 'refunded';
}

/**
 * Starting and reading image jobs: the one place their rules live for REST and GraphQL.
 * Creation is crash-safe without transactions: the job is inserted uncharged (invisible), charged once
 * under its own op id, then marked charged and queued; the sweep finishes or removes whatever a crash
 * leaves in between.
 */
export class ImageJobs implements ImageJobService {
  private readonly settlement: JobSettlement;

  constructor(private readonly deps: ImageJobServiceDeps) {
    this.settlement = deps.settlement ?? new JobSettlement({ jobs: deps.jobs, credits: deps.credits });
  }

  /**
   * `attempt`: the idempotent request this runs under, if any. A resumed attempt (its key was used by
   * a request that failed or died) first adopts the job an earlier attempt got accepted, or withdraws
   * one it left unaccepted: one key yields at most one charged job.
   */
  async create(principal: Principal, input: unknown, attempt?: IdempotentAttempt | null, optionsInput?: unknown): Promise<JobCreated> {
    const prompts = parsePrompts(input, this.deps.limits);
    const options = parseImageOptions(optionsInput, this.deps.offer);
    if (attempt?.resumed) {
      const adopted = await this.adoptEarlierAttempt(principal, attempt.ref);
      if (adopted) return adopted;
    }
    const { jobs, credits, queue } = this.deps;
    const now = new Date();
    const jobId = randomUUID();
    const n = prompts.length;
    // Priced by the operation catalog: so much per prompt (each image's refund gives its share back).
    const cost = costOf('generate', n);
    await jobs.insert({
      id: jobId,
      accountId: principal.accountId,
      keyId: principal.keyId,
      status: 'queued',
      totalImages: n,
      succeededImages: 0,
      failedImages: 0,
      canceledImages: 0,
      creditsUsed: cost,
      creditsRefunded: 0,
      cancelRequestedAt: null,
      charged: false,
      ...(attempt ? { request: attempt.ref } : {}),
      options,
      images: prompts.map((prompt, index) => ({
        index,
        prompt,
        status: 'queued',
        attempt: 0,
        fileId: null,
        error: null,
        refund: 'none',
        startedAt: null,
        heartbeatAt: null,
        finishedAt: null,
      })),
      createdAt: now,
      updatedAt: now,
      completedAt: null,
      // Its webhook event becomes due with whichever update makes the job final.
      eventPending: true,
    });
    const usage = { service: 'images', source: sourceOf(principal) } as const;
    let balance: number | null = null;
    try {
      balance = await credits.charge(principal.accountId, cost, jobChargeOpId(jobId), usage, principal);
      if (!(await jobs.markCharged(jobId, new Date()))) {
        // The sweep (or a retry with the same key) judged this request dead and withdrew it, or the
        // acceptance below applied already (a write retried after a lost reply): the catch tells which.
        throw new AppError('database_unavailable');
      }
    } catch (err) {
      // A refused charge is known not to have applied: the job just goes (no void marker to remember).
      if (isAppError(err) && err.code === 'insufficient_credits') {
        await jobs.deleteUncharged(jobId);
        throw err;
      }
      // A create answered with an error is never charged: withdraw it now (void the charge, or give it
      // back if it applied). Best effort: whatever this cannot reach, the sweep withdraws the same way,
      // or a retry with the same key adopts or withdraws it.
      const outcome = await withdrawJob({ jobs, credits }, { id: jobId, accountId: principal.accountId, keyId: principal.keyId, creditsUsed: cost }).catch(
        () => 'unknown' as const,
      );
      // Accepted after all (only the reply was lost): the job stands and runs, so the answer is a 2xx.
      if (outcome !== 'accepted') throw err;
    }
    // Accepted: the job is charged and visible. A failed enqueue must not turn the answer into an error
    // (a client retrying would pay twice): the sweep queues images whose queue entries are missing.
    try {
      await queue.enqueue(
        jobId,
        prompts.map((_, i) => i),
      );
    } catch (err) {
      this.deps.onBackgroundError?.(err);
    }
    // The job records the charge: the account may forget its id (after the enqueue, so the work
    // starts first). A failed settle only leaves the id on the account, within its bound.
    await credits.settle(principal.accountId, jobChargeOpId(jobId)).catch(() => undefined);
    return { jobId, totalImages: n, creditsUsed: cost, credits: balance ?? (await this.balanceOf(principal.accountId)) };
  }

  /** The job an earlier attempt of this request got accepted (withdrawing any it left unaccepted), or null. */
  private async adoptEarlierAttempt(principal: Principal, ref: string): Promise<JobCreated | null> {
    const { jobs, credits } = this.deps;
    for (const job of await jobs.findByRequest(principal.accountId, ref)) {
      if (!job.charged && (await withdrawJob({ jobs, credits }, job)) !== 'accepted') continue;
      // Its images are queued, or will be by the sweep (a lost enqueue); the charge's id may go.
      await credits.settle(principal.accountId, jobChargeOpId(job.id)).catch(() => undefined);
      return { jobId: job.id, totalImages: job.totalImages, creditsUsed: job.creditsUsed, credits: await this.balanceOf(principal.accountId) };
    }
    return null;
  }

  private async balanceOf(accountId: string): Promise<number> {
    return (await this.deps.credits.getAccount(accountId))?.credits ?? 0;
  }

  imageOptions(): ImageOffer {
    return this.deps.offer;
  }

  async get(principal: Principal, jobId: unknown, ctx: JobUrlContext): Promise<JobView> {
    const id = normalizeJobId(jobId);
    const [job] = id ? await this.deps.jobs.findForAccount(principal.accountId, [id]) : [];
    if (!job) throw new AppError('job_not_found');
    await this.presign([job]);
    return this.view(job, ctx);
  }

  /**
   * Cancels the caller's job: from now on no image starts; the queued ones are canceled and refunded
   * at once (each once, by whichever caller's guarded update moved it); a running one finishes, and the
   * job ends `canceled` when nothing runs. Idempotent: a canceled (or canceling) job is answered again;
   * a completed or failed one is job_finished; unknown, malformed or another account's: job_not_found.
   * A crash half way is finished by the sweep (or by a worker that picks up one of its images).
   */
  async cancel(principal: Principal, jobId: unknown, ctx: JobUrlContext): Promise<JobView> {
    const id = normalizeJobId(jobId);
    const job = id ? await this.deps.jobs.requestCancel(id, principal.accountId, new Date()) : null;
    if (!job) throw new AppError('job_not_found');
    if (job.status === 'completed' || job.status === 'failed') throw new AppError('job_finished');
    if (job.status !== 'canceled') {
      for (const img of job.images) if (img.status === 'queued') await this.settlement.cancelImage(job.id, img.index, null);
      // Nothing was queued (the last image ended while the cancel landed): the job ends here.
      await this.settlement.finalizeIfDone(job);
    }
    return this.get(principal, job.id, ctx);
  }

  async getMany(principal: Principal, jobIds: readonly string[], ctx: JobUrlContext): Promise<(JobView | null)[]> {
    const ids = jobIds.map(normalizeJobId);
    const valid = [...new Set(ids.filter((x): x is string => x !== null))];
    const found = valid.length ? await this.deps.jobs.findForAccount(principal.accountId, valid) : [];
    await this.presign(found);
    const byId = new Map(found.map((j) => [j.id, j]));
    return ids.map((id) => {
      const job = id ? byId.get(id) : undefined;
      return job ? this.view(job, ctx) : null;
    });
  }

  async list(principal: Principal, page: { first: number; after?: string | null }, ctx: JobUrlContext): Promise<JobPage> {
    const first = page.first;
    if (!Number.isInteger(first) || first < 1 || first > MAX_PAGE_SIZE) {
      throw invalid('first', `first must be an integer between 1 and ${MAX_PAGE_SIZE}`);
    }
    const after = page.after == null ? null : decodeCursor(page.after);
    const rows = await this.deps.jobs.listForAccount(principal.accountId, first + 1, after);
    const items = rows.slice(0, first);
    await this.presign(items);
    const last = items.at(-1);
    return {
      items: items.map((j) => this.view(j, ctx)),
      nextCursor: rows.length > first && last ? encodeCursor(last) : null,
    };
  }

  viewOf(principal: Principal, job: JobRecord, ctx: JobUrlContext): JobView | null {
    // The same visibility rule as findForAccount: the caller's own, charged jobs only.
    return job.accountId === principal.accountId && job.charged ? this.view(job, ctx) : null;
  }

  private view(job: JobRecord, ctx: JobUrlContext, now = new Date()): JobView {
    const { signer, presigned, offer } = this.deps;
    const baseUrl = this.deps.publicBaseUrl ?? ctx.baseUrl;
    return toJobView(job, signedViewing({ signer, baseUrl, offer, presigned, retentionMs: this.deps.retentionMs ?? DEFAULT_RETENTION_MS }), now);
  }

  /** Presigned mode: the URLs the views of these jobs will hold, made before the (synchronous) views. */
  private async presign(jobs: readonly JobRecord[]): Promise<void> {
    const { presigned, signer } = this.deps;
    if (!presigned) return;
    const files = jobs.flatMap((j) => j.images.filter((i) => i.status === 'succeeded' && i.fileId).map((i) => i.fileId!));
    if (files.length) await presigned.prepare(files, signer.expiryFor(new Date()));
  }
}

function normalizeJobId(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const id = value.trim().toLowerCase();
  return isJobId(id) ? id : null;
}

function encodeCursor(job: JobRecord): string {
  return Buffer.from(JSON.stringify([job.createdAt.getTime(), job.id])).toString('base64url');
}

function decodeCursor(cursor: unknown): { createdAt: Date; id: string } {
  try {
    const [ms, id] = JSON.parse(Buffer.from(String(cursor), 'base64url').toString('utf8')) as unknown[];
    if (typeof ms === 'number' && Number.isFinite(ms) && isJobId(id)) return { createdAt: new Date(ms), id };
  } catch {
    // fall through to the 400
  }
  throw invalid('after', 'after must be a cursor returned by a previous page');
}
