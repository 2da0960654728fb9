import type { UsageCount } from '../usage/types.js';

/** Persistence of accounts and their balances, implemented in src/data (MongoDB) and by test fakes. */
export interface AccountRecord {
  id: string;
  name: string;
  credits: number;
  createdAt: Date;
}

/** Automatic recharge as a balance update reads it: its threshold while one may start (on, none in flight), else null. */
export type RechargeState = { threshold: number } | null;

/** Outcome of one guarded balance change. */
export type ApplyResult =
  | {
      kind: 'applied';
      balance: number;
      /** The account's `credits.low` state, read in the same update (absent where the store does not read it). */
      lowCredits?: { threshold: number; armed: boolean };
      /** The account's automatic recharge, read in the same update (absent where the store does not read it). */
      recharge?: RechargeState;
    }
  /** The op id is already recorded on the account: nothing changed this time. */
  | { kind: 'already_applied'; balance: number }
  /** The op id was voided (voidOp): it never applies. */
  | { kind: 'voided'; balance: number }
  | { kind: 'insufficient'; balance: number }
  | { kind: 'unknown_account' }
  /** A charge held by a key (ApplyOptions.held): the key's credits on the account do not cover it (none of that period, or too few). Nothing changed. */
  | { kind: 'key_short' };

export interface ApplyOptions {
  /** A negative delta applies even past zero (the credits of a refunded payment are taken back whole). */
  mayGoNegative?: boolean;
  /**
   * A charge held by a capped key whose credits are on the account (KeyCreditsOnAccount): the same
   * update also takes `-delta` from the key's credits there, and only when those belong to `period`
   * and cover it; otherwise nothing changes and the answer is `key_short` (checked before the balance:
   * a key at its limit is refused for its limit, as when its credits are reserved on the key).
   */
  held?: { keyId: string; period: string };
}

/** A capped key's credits moved onto its account for one refill period (see KeyCreditsOnAccount). */
export interface HeldCredits {
  left: number;
  /** The refill period they belong to (`2026-11-27`, `2026-11`, or `none` for a key without refill). */
  period: string;
  /** The key's credit limit when they were moved: a refund never takes them past it. */
  limit: number;
}

/**
 * Where a capped key's credits left can live beside the balance they draw on (issue 33), so that a
 * capped charge is one guarded update of the account document, group-committed with the account's
 * other charges. The key's document stays the authority: credits come to the account by a move, a
 * reservation on the key (pending, with an op id) followed by this store's `moveIn` under the same op
 * id; the key sweep settles a move a crash interrupted exactly as it settles a charge's reservation.
 */
export interface KeyCreditsOnAccount {
  /**
   * Adds `amount` to the key's credits on the account for `period` (those of another period are
   * replaced: a refill has reset the key since), never past `limit`, and records `op` on the account,
   * once per op: 'applied' the first time, 'already_applied' after, 'voided' if the sweep voided it.
   */
  moveIn(accountId: string, keyId: string, amount: number, period: string, limit: number, op: string): Promise<'applied' | 'already_applied' | 'voided' | 'unknown_account'>;
  /**
   * Gives `amount` back to the key's credits on the account (never past their limit), once per
   * non-null op. False when the account holds none of the key's credits (the key's document takes it).
   */
  refundIn(accountId: string, keyId: string, amount: number, op: string | null): Promise<boolean>;
  /** The keys' credits the account holds, by key id. */
  heldOf(accountId: string): Promise<Map<string, HeldCredits>>;
  /** Takes the key's credits off the account (a settings change folds them into the key's document): what was there. */
  recall(accountId: string, keyId: string): Promise<HeldCredits | null>;
}

export interface AccountStore {
  create(name: string, credits: number, now: Date): Promise<AccountRecord>;
  /**
   * Creates the account of this id (0 credits) unless it exists: of concurrent calls exactly one
   * creates it (`created`), and every call gets the account. Null for an id that is not an account id.
   */
  createWithId(accountId: string, name: string, now: Date): Promise<{ account: AccountRecord; created: boolean } | null>;
  find(accountId: string): Promise<AccountRecord | null>;
  /** Any account at all (the demo-account bootstrap only runs on an empty database). */
  isEmpty(): Promise<boolean>;
  /**
   * ONE guarded update: adds `delta` (negative: a charge, which never takes the balance below zero)
   * and records `opId` on the account, unless `opId` is already recorded: at most once per op id, for
   * as long as the id stays recorded (until settle). A null opId is a one-shot change that nothing
   * retries: nothing is recorded.
   * `usage` is counted in the same update (so only when the change applies, and once per op id): a
   * negative delta counts one call and its credits, a positive one refunded credits. Grants pass none.
   */
  apply(accountId: string, delta: number, opId: string | null, usage?: UsageCount, opts?: ApplyOptions): Promise<ApplyResult>;
  /** Records `opId` without a balance change so it can never apply later; tells whether it already had. */
  voidOp(accountId: string, opId: string): Promise<'voided' | 'already_applied' | 'unknown_account'>;
  /**
   * Forgets `opId`: its outcome is now recorded elsewhere (the job), so nothing will send it again.
   * Keeps the list of recorded ids to the operations still in flight.
   */
  settle(accountId: string, opId: string): Promise<void>;
  /**
   * settle, for a caller that does not wait on it in a request: the store may write it together with
   * others a moment later (resolves once written).
   */
  settleSoon(accountId: string, opId: string): Promise<void>;
  balances(accountIds: readonly string[]): Promise<(number | null)[]>;
}
