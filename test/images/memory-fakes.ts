import { AppError } from '../../src/domain/errors.js';
import type { ImageRecord, ImageTransition, ImageWorkQueue, JobCredits, JobRecord, JobStore, StoredImageRef } from '../../src/domain/jobs/records.js';
import type { FinalJobStatus } from '../../src/domain/jobs/types.js';
import { ProviderError, type ImageProvider } from '../../src/providers/images/types.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import type { ImageKey, ImageStore, StoredImage, StoredImageInfo } from '../../src/storage/types.js';

/**
 * In-memory JobStore with the same guard semantics as the MongoDB one (each method is one atomic step:
 * JavaScript runs it without interleaving), for domain tests without a database.
 */
export class MemoryJobStore implements JobStore {
  readonly docs = new Map<string, JobRecord>();

  private clone(j: JobRecord): JobRecord {
    return structuredClone(j);
  }
  private transition(j: JobRecord, index: number): ImageTransition {
    const { images, ...job } = this.clone(j);
    return { job, image: images.find((i) => i.index === index)! };
  }
  async insert(job: JobRecord) {
    this.docs.set(job.id, this.clone(job));
  }
  async deleteUncharged(id: string) {
    const j = this.docs.get(id);
    if (!j || j.charged) return false;
    return this.docs.delete(id);
  }
  async markCharged(id: string, now: Date) {
    const j = this.docs.get(id);
    if (!j || j.charged || j.withdrawing) return false;
    j.charged = true;
    j.updatedAt = now;
    return true;
  }
  async beginWithdrawal(id: string) {
    const j = this.docs.get(id);
    if (!j || j.charged) return false;
    j.withdrawing = true;
    return true;
  }
  async findByRequest(accountId: string, ref: string) {
    return [...this.docs.values()]
      .filter((j) => j.accountId === accountId && j.request === ref)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())
      .map((j) => this.clone(j));
  }
  async findForAccount(accountId: string, ids: readonly string[]) {
    return ids.map((id) => this.docs.get(id)).filter((j): j is JobRecord => !!j && j.accountId === accountId && j.charged).map((j) => this.clone(j));
  }
  async listForAccount(accountId: string, limit: number, after: { createdAt: Date; id: string } | null) {
    return [...this.docs.values()]
      .filter((j) => j.accountId === accountId && j.charged)
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1))
      .filter((j) => !after || j.createdAt < after.createdAt || (j.createdAt.getTime() === after.createdAt.getTime() && j.id < after.id))
      .slice(0, limit)
      .map((j) => this.clone(j));
  }
  async findById(id: string) {
    const j = this.docs.get(id);
    return j ? this.clone(j) : null;
  }
  async claimImage(id: string, index: number, now: Date, staleBefore: Date, heartbeatAt: Date) {
    const j = this.docs.get(id);
    const img = j?.charged && !j.cancelRequestedAt ? j.images.find((i) => i.index === index) : undefined;
    if (!j || !img) return null;
    const stale = img.status === 'running' && img.heartbeatAt !== null && img.heartbeatAt <= staleBefore;
    if (img.status !== 'queued' && !stale) return null;
    Object.assign(img, { attempt: img.attempt + 1, status: 'running', startedAt: now, heartbeatAt, error: null });
    j.status = 'running';
    j.updatedAt = now;
    return this.transition(j, index);
  }
  async heartbeat(id: string, index: number, attempt: number, at: Date) {
    const img = this.running(id, index, attempt);
    if (img) img.heartbeatAt = at;
    return !!img;
  }
  async completeImage(id: string, index: number, attempt: number, stored: StoredImageRef, now: Date) {
    const img = this.running(id, index, attempt);
    if (!img) return null;
    Object.assign(img, { status: 'succeeded', ...stored, finishedAt: now });
    const j = this.docs.get(id)!;
    j.succeededImages++;
    j.updatedAt = now;
    if (!j.oldestStoredAt || j.oldestStoredAt > now) j.oldestStoredAt = now;
    return this.transition(j, index);
  }
  async failImage(id: string, index: number, attempt: number, error: string, now: Date) {
    const img = this.running(id, index, attempt);
    if (!img) return null;
    Object.assign(img, { status: 'failed', error, refund: 'pending', finishedAt: now });
    const j = this.docs.get(id)!;
    j.failedImages++;
    j.updatedAt = now;
    return this.transition(j, index);
  }
  async releaseImage(id: string, index: number, attempt: number, error: string, now: Date) {
    const img = this.running(id, index, attempt);
    if (!img) return null;
    Object.assign(img, { status: 'queued', error, heartbeatAt: null });
    const j = this.docs.get(id)!;
    j.updatedAt = now;
    return this.transition(j, index);
  }
  async markRefunded(id: string, index: number, now: Date) {
    const j = this.docs.get(id);
    const img = j?.images.find((i) => i.index === index && i.refund === 'pending');
    if (!j || !img) return null;
    img.refund = 'done';
    j.creditsRefunded++;
    j.updatedAt = now;
    return this.transition(j, index);
  }
  async finalize(id: string, status: FinalJobStatus, now: Date) {
    const j = this.docs.get(id);
    if (!j || (j.status !== 'queued' && j.status !== 'running') || (status === 'canceled') !== (j.cancelRequestedAt !== null)) return null;
    Object.assign(j, { status, completedAt: now, updatedAt: now });
    return this.clone(j);
  }
  async requestCancel(id: string, accountId: string, now: Date) {
    const j = this.docs.get(id);
    if (!j || j.accountId !== accountId || !j.charged) return null;
    if ((j.status === 'queued' || j.status === 'running') && !j.cancelRequestedAt) Object.assign(j, { cancelRequestedAt: now, updatedAt: now });
    return this.clone(j);
  }
  async cancelImage(id: string, index: number, staleBefore: Date | null, now: Date) {
    const j = this.docs.get(id);
    const img = j?.cancelRequestedAt ? j.images.find((i) => i.index === index) : undefined;
    if (!j || !img) return null;
    const stale = staleBefore !== null && img.status === 'running' && img.heartbeatAt !== null && img.heartbeatAt <= staleBefore;
    if (img.status !== 'queued' && !stale) return null;
    Object.assign(img, { status: 'canceled', refund: 'pending', finishedAt: now });
    j.canceledImages++;
    j.updatedAt = now;
    return this.transition(j, index);
  }
  async findUncharged(before: Date, limit: number) {
    return [...this.docs.values()].filter((j) => !j.charged && j.createdAt <= before).slice(0, limit).map((j) => this.clone(j));
  }
  async findStalled(before: Date, limit: number) {
    return [...this.docs.values()]
      .filter((j) => j.charged && (j.status === 'queued' || j.status === 'running') && j.updatedAt <= before)
      .slice(0, limit)
      .map((j) => this.clone(j));
  }
  async findRetained(cutoff: Date, limit: number) {
    return [...this.docs.values()]
      .filter((j) => (j.oldestStoredAt ? j.oldestStoredAt <= cutoff : !j.retentionSwept && j.completedAt !== null && j.completedAt <= cutoff))
      .slice(0, limit)
      .map((j) => this.clone(j));
  }
  async expireImage(id: string, index: number, fileId: string, cutoff: Date, now: Date) {
    const j = this.docs.get(id);
    const img = j?.images[index];
    if (!j || !img || img.status !== 'succeeded' || img.fileId !== fileId || img.expiredAt || !img.finishedAt || img.finishedAt > cutoff) return false;
    img.expiredAt = now;
    j.updatedAt = now;
    return true;
  }
  async forgetFile(id: string, index: number, fileId: string) {
    const img = this.docs.get(id)?.images[index];
    if (img && img.fileId === fileId && img.expiredAt) img.fileId = null;
  }
  async setOldestStored(id: string, updatedAt: Date, oldest: Date | null) {
    const j = this.docs.get(id);
    if (!j || j.updatedAt.getTime() !== updatedAt.getTime()) return;
    if (oldest) j.oldestStoredAt = oldest;
    else {
      delete j.oldestStoredAt;
      j.retentionSwept = true;
    }
  }
  private running(id: string, index: number, attempt: number): ImageRecord | undefined {
    return this.docs.get(id)?.images.find((i) => i.index === index && i.status === 'running' && i.attempt === attempt);
  }
}

/** Credits applied at most once per op id, like the gateway core's CreditService. */
export class MemoryCredits implements JobCredits {
  readonly balances = new Map<string, number>();
  readonly ops = new Map<string, Set<string>>();
  readonly refunds: { accountId: string; opId: string }[] = [];
  failNextCharge: Error | null = null;

  private applied(accountId: string): Set<string> {
    let s = this.ops.get(accountId);
    if (!s) this.ops.set(accountId, (s = new Set()));
    return s;
  }
  async charge(accountId: string, amount: number, opId: string) {
    if (this.failNextCharge) {
      const e = this.failNextCharge;
      this.failNextCharge = null;
      throw e;
    }
    const balance = this.balances.get(accountId) ?? 0;
    if (this.applied(accountId).has(opId)) return balance;
    if (this.applied(accountId).has(`void:${opId}`)) throw new AppError('database_unavailable');
    if (balance < amount) throw new AppError('insufficient_credits');
    this.applied(accountId).add(opId);
    this.balances.set(accountId, balance - amount);
    return balance - amount;
  }
  async refund(accountId: string, amount: number, opId: string) {
    if (this.applied(accountId).has(opId)) return;
    this.applied(accountId).add(opId);
    this.refunds.push({ accountId, opId });
    this.balances.set(accountId, (this.balances.get(accountId) ?? 0) + amount);
  }
  async voidOp(accountId: string, opId: string) {
    if (this.applied(accountId).has(opId)) return 'already_applied' as const;
    // A marker, as on the account: a late charge with the id never applies, a second void is 'voided' too.
    this.applied(accountId).add(`void:${opId}`);
    return 'voided' as const;
  }
  async getAccount(accountId: string) {
    const credits = this.balances.get(accountId);
    return credits === undefined ? null : { credits };
  }
  readonly settled: string[] = [];
  async settle(accountId: string, opId: string) {
    this.settled.push(opId);
    this.applied(accountId).delete(opId);
  }
}

export class MemoryQueue implements ImageWorkQueue {
  readonly entries: { jobId: string; index: number }[] = [];
  async enqueue(jobId: string, indexes: readonly number[]) {
    for (const index of indexes) this.entries.push({ jobId, index });
  }
  async queuedIndexes(jobId: string) {
    return new Set(this.entries.filter((e) => e.jobId === jobId).map((e) => e.index));
  }
  take(): { jobId: string; index: number } | undefined {
    return this.entries.shift();
  }
}

export class MemoryImageStore implements ImageStore {
  readonly files = new Map<string, StoredImage & { key: ImageKey }>();
  private next = 0;
  async put(key: ImageKey, image: { data: Buffer; contentType: string }): Promise<StoredImageInfo> {
    const fileId = (++this.next).toString(16).padStart(24, '0');
    const info = { fileId, contentType: image.contentType, length: image.data.length, etag: `"${fileId}"` };
    this.files.set(fileId, { ...info, data: image.data, key });
    return info;
  }
  async stat(fileId: string) {
    const f = this.files.get(fileId);
    return f ? { fileId, contentType: f.contentType, length: f.length, etag: f.etag } : null;
  }
  async get(fileId: string) {
    return this.files.get(fileId) ?? null;
  }
  async delete(fileId: string) {
    this.files.delete(fileId);
  }
}

/**
 * An image provider that holds prompts starting with `hold` until the test lets them go (`release`,
 * with success or a provider's refusal), so that an image stays mid-flight for as long as a test needs;
 * every other prompt is generated at once, and prompts starting with `reject` are refused.
 */
export class GatedImageProvider implements ImageProvider {
  readonly name = 'gated';
  readonly offer = BUILTIN_OFFER;
  readonly calls: string[] = [];
  private readonly held = new Map<string, { resolve: (outcome: 'succeed' | 'reject') => void }>();
  private readonly waiters: (() => void)[] = [];

  async generate(prompt: string) {
    this.calls.push(prompt);
    for (const wake of this.waiters.splice(0)) wake();
    if (prompt.startsWith('reject')) throw new ProviderError('provider_rejected', 'Image provider rejected the request (HTTP 400)');
    if (prompt.startsWith('hold')) {
      const outcome = await new Promise<'succeed' | 'reject'>((resolve) => this.held.set(prompt, { resolve }));
      if (outcome === 'reject') throw new ProviderError('provider_rejected', 'Image provider rejected the request (HTTP 400)');
    }
    return { data: Buffer.from(`png:${prompt}`), contentType: 'image/png' };
  }

  /** Resolves once the provider is generating `prompt` (it is then held, if it is a `hold` prompt). */
  async started(prompt: string): Promise<void> {
    while (!this.held.has(prompt) && !this.calls.includes(prompt)) await new Promise<void>((r) => this.waiters.push(r));
    while (prompt.startsWith('hold') && !this.held.has(prompt)) await new Promise((r) => setImmediate(r));
  }

  release(prompt: string, outcome: 'succeed' | 'reject' = 'succeed'): void {
    const h = this.held.get(prompt);
    if (!h) throw new Error(`${prompt} is not held`);
    this.held.delete(prompt);
    h.resolve(outcome);
  }

  /** Lets every held prompt finish (test teardown). */
  releaseAll(): void {
    for (const prompt of [...this.held.keys()]) this.release(prompt);
  }
}
