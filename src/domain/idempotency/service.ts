import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { AppError, invalid, isAppError, type ErrorCode } from '../errors.js';
import type { Principal } from '../principal.js';

/** What a request produced, as stored for replay: its result, or the client error it was answered with. */
export type StoredOutcome = { ok: true; value: unknown } | { ok: false; code: ErrorCode; message: string; field: string | null };

export interface IdempotencyRecord {
  /** SHA-256 of account, caller and key: keys of different callers never meet. */
  id: string;
  /** SHA-256 of the operation and its input: the same key with another body is refused. */
  fingerprint: string;
  state: 'running' | 'done';
  outcome: StoredOutcome | null;
  /**
   * Names the work done under this record, the same for every attempt until it is done: what an
   * attempt leaves behind (an image job) carries it, so a later attempt finds it. Records stored before
   * it existed have none (their id serves).
   */
  ref?: string;
  /** A running request that has not finished by then is presumed dead; a retry may take over. */
  lockedUntil: Date;
  /** Kept this long (24 h), then removed by the database's TTL monitor. */
  expiresAt: Date;
}

export interface IdempotencyStore {
  /** Inserts the record; returns the one already stored under its id instead, if any. */
  claim(record: IdempotencyRecord): Promise<IdempotencyRecord | null>;
  /** Takes over a running record whose lock has expired; false when someone else did (or it finished). */
  takeOver(id: string, now: Date, lockedUntil: Date): Promise<boolean>;
  complete(id: string, outcome: StoredOutcome): Promise<void>;
  /** Ends the lock of a running record now: its attempt failed in a way worth retrying; the next takes over. */
  unlock(id: string, now: Date): Promise<void>;
}

/**
 * What the work of one attempt is told: `ref` to stamp on what it leaves behind, and whether an
 * earlier attempt under the same key may have left something (it failed or died): then the work must
 * look for it first and adopt or withdraw it, so that one key never pays twice.
 */
export interface IdempotentAttempt {
  ref: string;
  resumed: boolean;
  /**
   * Runs `settle` once this attempt's answer is stored for replay (a result, or a client error): from
   * then on a retry is a replay, so what the work kept for a retry to find (an operation id on the
   * account) may go. Never run when the attempt fails in a way worth retrying, nor when the process dies.
   */
  afterStored?: (settle: () => Promise<void>) => void;
}

/**
 * What a request under an Idempotency-Key came to: it ran now, or an earlier attempt's answer is given
 * again (its result, or the client error it was answered with). A door says which (REST:
 * `Idempotent-Replayed: true`).
 */
export type IdempotentOutcome<T> =
  | { readonly kind: 'ran'; readonly value: T }
  | { readonly kind: 'replayed'; readonly value: T }
  | { readonly kind: 'replayed_error'; readonly error: AppError };

/** The answer an outcome gives: its value, or (a replayed client error) the error thrown again. */
export function answerOf<T>(outcome: IdempotentOutcome<T>): T {
  if (outcome.kind === 'replayed_error') throw outcome.error;
  return outcome.value;
}

/** Whether a request came with an Idempotency-Key: without one there is nothing to claim, remember or replay. */
export function idempotencyKeySent<K>(key: K | undefined | null): key is K {
  return key !== undefined && key !== null;
}

const KEEP_MS = 24 * 3600_000;
const LOCK_MS = 60_000;
const KEY = /^[\x21-\x7e]{1,255}$/;
const KEY_RULE = 'must be 1 to 255 printable ASCII characters';

/** The `Idempotency-Key` header as REST routes declare it (GraphQL's `idempotencyKey` follows the same rule). */
export const idempotencyKeySchema = z
  .string()
  .regex(KEY, KEY_RULE)
  .meta({
    description:
      'Makes a retry safe: the first result (success or client error) is kept 24 hours per API key and key value and replayed with `Idempotent-Replayed: true`; the same key with another body is 422 `idempotency_key_reused`, and 409 `idempotency_key_in_progress` while the first request runs.',
  });

/**
 * Idempotency keys with Stripe's semantics, for every door that charges (REST `Idempotency-Key`, the
 * GraphQL `idempotencyKey` argument): the first result, success or client error, is stored for 24 h per
 * account, caller and key, and replayed for the same key and input; the same key with a different input
 * is 422 `idempotency_key_reused`; a request still running with that key is 409. A retryable failure
 * (a 5xx, a 429) is not stored: the record is unlocked and a retry runs again, as a resumed attempt.
 * An attempt that failed (or whose answer was lost with the database) may still have left work that
 * applied, such as an accepted, charged image job: the resumed attempt gets the same `ref` and adopts
 * that work instead of doing it again (ImageJobs.create), so one key yields at most one charge.
 */
export class Idempotency {
  private readonly now: () => Date;
  private readonly lockMs: number;

  /** `lockMs`: how long a running request holds its key before a retry may take over (default 60 s). */
  constructor(private readonly deps: { store: IdempotencyStore; now?: () => Date; lockMs?: number }) {
    this.now = deps.now ?? (() => new Date());
    this.lockMs = deps.lockMs ?? LOCK_MS;
  }

  async run<T>(
    principal: Principal,
    key: unknown,
    operation: string,
    input: unknown,
    work: (attempt: IdempotentAttempt | null) => Promise<T>,
  ): Promise<IdempotentOutcome<T>> {
    if (!idempotencyKeySent(key)) return { kind: 'ran', value: await work(null) };
    if (typeof key !== 'string' || !KEY.test(key)) throw invalid('idempotencyKey', `Idempotency-Key ${KEY_RULE}`);
    const caller = principal.keyId ?? `console:${principal.userId ?? ''}`;
    const id = sha256(`${principal.accountId}\n${caller}\n${key}`);
    const fingerprint = sha256(`${operation}\n${JSON.stringify(input ?? null)}`);
    const now = this.now();
    const ref = randomUUID();
    const existing = await this.deps.store.claim({
      id,
      fingerprint,
      state: 'running',
      outcome: null,
      ref,
      lockedUntil: new Date(now.getTime() + this.lockMs),
      expiresAt: new Date(now.getTime() + KEEP_MS),
    });
    const settlements: (() => Promise<void>)[] = [];
    const afterStored = (settle: () => Promise<void>) => void settlements.push(settle);
    let attempt: IdempotentAttempt = { ref, resumed: false, afterStored };
    if (existing) {
      if (existing.fingerprint !== fingerprint) throw new AppError('idempotency_key_reused');
      if (existing.state === 'done' && existing.outcome) return replay<T>(existing.outcome);
      const takenOver = existing.lockedUntil <= now && (await this.deps.store.takeOver(id, now, new Date(now.getTime() + this.lockMs)));
      if (!takenOver) throw new AppError('idempotency_key_in_progress', { retryAfter: 1 });
      attempt = { ref: existing.ref ?? id, resumed: true, afterStored };
    }
    let value: T;
    try {
      value = await work(attempt);
    } catch (err) {
      if (isAppError(err) && !err.spec.retryable) {
        await this.deps.store.complete(id, { ok: false, code: err.code, message: err.message, field: err.field ?? null });
        await settleAll(settlements);
      } else {
        await this.unlock(id);
      }
      throw err;
    }
    try {
      // JSON round trip: what is stored is exactly what a replay will return.
      await this.deps.store.complete(id, { ok: true, value: JSON.parse(JSON.stringify(value)) as unknown });
    } catch (err) {
      // The work applied but its answer cannot be stored: the client gets the error, and its retry
      // (at once if this unlock gets through, else once the lock expires) adopts the work by `ref`.
      await this.unlock(id);
      throw err;
    }
    await settleAll(settlements);
    return { kind: 'ran', value };
  }

  /**
   * Best effort: if the database cannot be reached the lock simply expires. The record stays (with its
   * input and `ref`) rather than being deleted, so the retry is a resumed attempt that finds what this
   * one may have left.
   */
  private async unlock(id: string): Promise<void> {
    await this.deps.store.unlock(id, this.now()).catch(() => undefined);
  }
}

/** Best effort: what is not settled stays recorded (bounded on the account), which only costs room. */
async function settleAll(settlements: (() => Promise<void>)[]): Promise<void> {
  await Promise.all(settlements.map((settle) => settle().catch(() => undefined)));
}

function replay<T>(outcome: StoredOutcome): IdempotentOutcome<T> {
  if (outcome.ok) return { kind: 'replayed', value: outcome.value as T };
  return { kind: 'replayed_error', error: new AppError(outcome.code, { message: outcome.message, field: outcome.field ?? undefined }) };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
