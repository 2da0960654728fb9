import type { KeyGrant, KeyPrincipal, Principal } from './principal.js';
import type { IdempotentAttempt } from './idempotency/service.js';
import type { RateLimitOutcome } from './keys/rate-limit.js';
import type { RevocationReason } from './keys/revocations.js';
import type { JobCreated, JobView } from './jobs/types.js';
import type { JobRecord } from './jobs/records.js';
import type { ImageOffer } from './jobs/options.js';

/**
 * What the doors (REST routes, GraphQL resolvers, workers) may call. The gateway core implements the
 * key, credit and definition services; the image-jobs work implements ImageJobService. Inputs arrive as
 * `unknown` and are validated inside the service, so every door gets the same rules and texts.
 */

export interface KeyAuthenticator {
  /**
   * Checks an `Authorization` header value. Throws AppError missing_authorization,
   * invalid_api_key_format or invalid_api_key (contract texts and order), and counts one unit against
   * the key's rate limit (AppError rate_limited over it).
   */
  authenticate(authorization: string | undefined): Promise<KeyPrincipal>;
  /**
   * The same check and count (`cost` units, default 1), with the rate limit's verdict as a value (for
   * the RateLimit headers): a refusal is `rateLimit.ok === false`, for the caller to answer with a 429.
   */
  authenticateWithLimit(authorization: string | undefined, cost?: number): Promise<KeyAdmission>;
  /**
   * Counts `cost` units of the key's rate limit and notes its use, as authenticate does, for a request
   * made by other means (a client token it minted) or for a request's further units (each charging
   * GraphQL field). The verdict is a value (null: no limit configured); the caller answers a refusal.
   */
  admit(keyId: string, cost?: number, key?: Pick<Principal, 'rateLimitPerMinute'>): Promise<RateLimitOutcome | null>;
  /** True while the key exists and is not deleted (reads the database; no cache). */
  isActive(keyId: string): Promise<boolean>;
  /** Called with the key id whenever a key is deleted or expires, on any instance. Returns an unsubscribe function. */
  onRevoked(listener: (keyId: string, reason: RevocationReason) => void): () => void;
  /**
   * Called with a key's grant (its permissions, limits) as it stands after a change of its settings, on
   * any instance, possibly more than once per change. Returns an unsubscribe function.
   */
  onGrantChanged(listener: (keyId: string, grant: KeyGrant) => void): () => void;
}

/** An authenticated key and what the rate limit said of this request (null: no limit configured). */
export interface KeyAdmission {
  principal: KeyPrincipal;
  rateLimit: RateLimitOutcome | null;
}

export interface CreditBalances {
  /** Current balance of each account, in the order asked (null for an unknown account). Batched for DataLoader. */
  balances(accountIds: readonly string[]): Promise<(number | null)[]>;
}

export interface DefinitionResult {
  keyword: string;
  definition: string;
  credits: number;
}

export interface DefinitionService {
  /**
   * Validates `keyword`, charges 1 credit, returns the definition. Provider failure: 502/503, not charged.
   * `attempt` (under an Idempotency-Key): the charge carries the attempt's id, so a retry that takes
   * over an attempt that died after its charge pays nothing more.
   */
  lookup(principal: Principal, keyword: unknown, attempt?: IdempotentAttempt | null): Promise<DefinitionResult>;
}

export interface JobUrlContext {
  /** Base address for signed image URLs, e.g. `http://localhost:4000`. */
  baseUrl: string;
}

export interface JobPage {
  items: JobView[];
  /** Opaque cursor for the next page, null on the last page. */
  nextCursor: string | null;
}

export interface ImageJobService {
  /**
   * Validates `prompts` and `options` (size, format, seed, negativePrompt), charges one credit per prompt atomically, stores the job, queues the work.
   * `attempt`: the Idempotency-Key attempt it runs under (Idempotency.run hands it to the work), so a
   * retry adopts the job an earlier attempt left instead of charging again.
   */
  create(principal: Principal, prompts: unknown, attempt?: IdempotentAttempt | null, options?: unknown): Promise<JobCreated>;
  /** What this deployment offers (sizes, formats, seed, negative prompt): the options `create` takes. */
  imageOptions(): ImageOffer;
  /** The caller's job. Unknown, malformed or another account's id: AppError job_not_found. */
  get(principal: Principal, jobId: unknown, ctx: JobUrlContext): Promise<JobView>;
  /**
   * Cancels the caller's job and returns it as it is then: queued images canceled and refunded, a
   * running one left to finish (the job ends `canceled` when nothing runs). Again on a canceled job:
   * the job. AppError job_finished for a completed or failed job, job_not_found as `get`.
   */
  cancel(principal: Principal, jobId: unknown, ctx: JobUrlContext): Promise<JobView>;
  /** Batched for DataLoader: the caller's jobs by id, null where not found / not the caller's. */
  getMany(principal: Principal, jobIds: readonly string[], ctx: JobUrlContext): Promise<(JobView | null)[]>;
  /** The caller's jobs, newest first. */
  list(principal: Principal, page: { first: number; after?: string | null }, ctx: JobUrlContext): Promise<JobPage>;
  /**
   * The caller's view of a job already read elsewhere (a change event fanned out to many subscribers,
   * so no read per subscriber); null when it is another account's job or not yet charged (invisible).
   */
  viewOf(principal: Principal, job: JobRecord, ctx: JobUrlContext): JobView | null;
}

export interface JobWatch {
  /**
   * The caller's job now, then each later state the caller may see, ending after a final one. Errors
   * as `ImageJobService.get` (job_not_found). Aborting `signal` ends the stream with the signal's
   * reason (GraphQL: the key was deleted); returning the iterator releases it at once.
   */
  watch(principal: Principal, jobId: string, ctx: JobUrlContext, signal: AbortSignal): Promise<AsyncIterableIterator<JobView>>;
}
