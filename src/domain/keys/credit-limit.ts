/**
 * A key's credit limit (issue 24): a charge needs both the account's balance and the key's credits
 * left. Without transactions, the two are two guarded single-document updates with a durable record
 * in between: the key's reservation takes the credits and records the operation as pending on the
 * key (one update), the account's charge records the same operation id on the account (another), and
 * the reservation is then confirmed. A process that dies in between leaves the pending entry; the
 * sweep settles it by voiding the operation on the account: voided (it never applied, and now never
 * will) gives the key its credits back, already applied keeps them spent. Every step is once per
 * operation, so the request, any number of sweeps and retries may run them in any order.
 */

/** The refill periods an instant falls in, as KeyCreditStore.reserve compares them. */
export interface RefillPeriods {
  daily: string;
  monthly: string;
}

/** A reservation on a key whose account charge is not known to have applied. */
export interface PendingReservation {
  keyId: string;
  accountId: string;
  op: string;
  amount: number;
  /** The refill period the credits were taken from (null: a key without refill). */
  period: string | null;
  at: Date;
}

export type ReserveOutcome =
  /** Taken; `period` is the refill period they came from. */
  | { kind: 'reserved'; period: string | null }
  /** Not enough left on the key: nothing taken. */
  | { kind: 'limit' }
  /** The key has no credit limit (any more), or is gone: nothing to hold. */
  | { kind: 'uncapped' };

export type MoveOutcome =
  | { kind: 'reserved'; period: string | null; amount: number; limit: number }
  /** `moving`: a reservation younger than MOVE_IN_FLIGHT_MS is pending (credits on their way to the account). */
  | { kind: 'limit'; period: string | null; moving: boolean }
  | { kind: 'uncapped' };

export interface KeyCreditStore {
  /**
   * One guarded update: when the key has a credit limit and, after a refill that is due (a new UTC day
   * or month: credits left reset to the limit), at least `amount` left, takes it and records `op` as
   * pending. The same op reserved again is answered as reserved (nothing taken twice).
   */
  reserve(keyId: string, op: string, amount: number, periods: RefillPeriods, at: Date): Promise<ReserveOutcome>;
  /**
   * A move of the key's credits onto its account (KeyCreditsOnAccount): one guarded update that, after
   * a refill that is due, takes ALL the key's credits left (at least 1) and records `op` as pending
   * for that amount. 'limit' when none is left, with the period the key is in now; 'reserved' names
   * the period, the amount taken and the key's limit.
   */
  reserveAll?(keyId: string, op: string, periods: RefillPeriods, at: Date): Promise<MoveOutcome>;
  /** The account's charge applied: the pending entry goes, the credits stay spent. */
  confirm(keyId: string, op: string): Promise<void>;
  /**
   * The account's charge never applied: the pending entry goes and its credits come back (never past
   * the limit; not at all when a refill has reset the key since). Once: only while the entry is there.
   */
  release(keyId: string, reservation: { op: string; amount: number; period: string | null }): Promise<void>;
  /** Refunded credits back to a capped key (never past the limit); with an op id, once per op. */
  refund(keyId: string, op: string | null, amount: number): Promise<void>;
  /** Reservations pending since before `before` (their process presumably died), oldest first. */
  stale(before: Date, limit: number): Promise<PendingReservation[]>;
}

/** The refill periods of an instant: its UTC day and month. */
export function refillPeriodsAt(at: Date): RefillPeriods {
  const iso = at.toISOString();
  return { daily: iso.slice(0, 10), monthly: iso.slice(0, 7) };
}

/** A pending reservation younger than this is taken for one in flight (its process alive), not a dead one's. */
export const MOVE_IN_FLIGHT_MS = 5_000;

/** How the account names a key's refill period (a key without refill: `none`). */
export function heldPeriod(period: string | null): string {
  return period ?? 'none';
}

/** The operation id a one-shot charge (a lookup's) gets on a capped key, so a sweep can settle it. */
export const keyChargeOpPrefix = 'keycharge:';
