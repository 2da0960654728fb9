import { createHash } from 'node:crypto';
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
  /** Forgets the key: the request failed in a way worth retrying, and nothing was charged. */
  release(id: string): Promise<void>;
}

const KEEP_MS = 24 * 3600_000;
const LOCK_MS = 60_000;
const KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Idempotency keys with Stripe's semantics, for every door that charges (REST `Idempotency-Key`, the
 * GraphQL `idempotencyKey` argument): the first result, success or client error, is stored for 24 h per
 * account, caller and key, and replayed for the same key and input; the same key with a different input
 * is 422 `idempotency_key_reused`; a request still running with that key is 409. A retryable failure
 * (a 5xx, a 429) is not stored: the key is released and a retry runs again. Nothing is charged twice
 * for it, because a charge is only kept when the request succeeds (see withdrawJob, DefinitionLookup).
 */
export class Idempotency {
  private readonly now: () => Date;

  constructor(private readonly deps: { store: IdempotencyStore; now?: () => Date }) {
    this.now = deps.now ?? (() => new Date());
  }

  async run<T>(principal: Principal, key: unknown, operation: string, input: unknown, work: () => Promise<T>): Promise<{ value: T; replayed: boolean }> {
    if (key === undefined || key === null) return { value: await work(), replayed: false };
    if (typeof key !== 'string' || !KEY.test(key)) throw invalid('idempotencyKey', 'Idempotency-Key must be 1 to 255 printable ASCII characters');
    const caller = principal.keyId ?? `console:${principal.userId ?? ''}`;
    const id = sha256(`${principal.accountId}\n${caller}\n${key}`);
    const fingerprint = sha256(`${operation}\n${JSON.stringify(input ?? null)}`);
    const now = this.now();
    const existing = await this.deps.store.claim({
      id,
      fingerprint,
      state: 'running',
      outcome: null,
      lockedUntil: new Date(now.getTime() + LOCK_MS),
      expiresAt: new Date(now.getTime() + KEEP_MS),
    });
    if (existing) {
      if (existing.fingerprint !== fingerprint) throw new AppError('idempotency_key_reused');
      if (existing.state === 'done' && existing.outcome) return { value: replay<T>(existing.outcome), replayed: true };
      const takenOver = existing.lockedUntil <= now && (await this.deps.store.takeOver(id, now, new Date(now.getTime() + LOCK_MS)));
      if (!takenOver) throw new AppError('idempotency_key_in_progress', { retryAfter: 1 });
    }
    let value: T;
    try {
      value = await work();
    } catch (err) {
      if (isAppError(err) && !err.spec.retryable) {
        await this.deps.store.complete(id, { ok: false, code: err.code, message: err.message, field: err.field ?? null });
      } else {
        await this.deps.store.release(id).catch(() => undefined);
      }
      throw err;
    }
    // JSON round trip: what is stored is exactly what a replay will return.
    await this.deps.store.complete(id, { ok: true, value: JSON.parse(JSON.stringify(value)) as unknown });
    return { value, replayed: false };
  }
}

function replay<T>(outcome: StoredOutcome): T {
  if (outcome.ok) return outcome.value as T;
  // The door marks the answer as a replay (REST: Idempotent-Replayed: true).
  throw Object.assign(new AppError(outcome.code, { message: outcome.message, field: outcome.field ?? undefined }), { replayed: true });
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
