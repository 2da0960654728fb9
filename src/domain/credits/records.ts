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
  | { kind: 'unknown_account' };

export interface ApplyOptions {
  /** A negative delta applies even past zero (the credits of a refunded payment are taken back whole). */
  mayGoNegative?: boolean;
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
  balances(accountIds: readonly string[]): Promise<(number | null)[]>;
}
