import type { CallSource } from '../principal.js';

/** The services whose calls are charged, as usage names them. */
export type MeteredService = 'images' | 'definitions';

/**
 * What a charge or a refund is for, carried to the account store so that the usage counters change in
 * the same guarded update as the balance: which service, and who called (key id, or `console`).
 */
export interface UsageTag {
  readonly service: MeteredService;
  readonly source: CallSource;
}

/** A usage tag with the time of the change: it is counted in that UTC day's bucket. */
export interface UsageCount extends UsageTag {
  readonly at: Date;
}

/** Usage of one account for one UTC day, service and source. */
export interface UsageRow {
  /** UTC midnight of the day. */
  day: Date;
  service: MeteredService;
  source: CallSource;
  /** Charged calls (a lookup, an image job). */
  calls: number;
  /** Credits those calls were charged. */
  credits: number;
  /** Credits given back that day (a failed image, a failed lookup). */
  refunded: number;
}

/**
 * Persistence of usage. Counting is not here: the account store counts with every charge and refund
 * (AccountStore.apply). Recent days stay on the account; past days are rolled up into long-term rows.
 */
export interface UsageStore {
  /**
   * Moves the account's counters of days before `before` (a UTC midnight) to long-term rows. Safe to
   * repeat, to run concurrently and to be interrupted at any point: no count is lost or counted twice.
   */
  rollUp(accountId: string, before: Date): Promise<void>;
  /** Rolls up at most `limit` accounts holding counters of days before `before`; returns how many it did. */
  rollUpStale(before: Date, limit: number): Promise<number>;
  /** The account's rows of the UTC days from `from` to `to` (both UTC midnights, inclusive); null for an unknown account. */
  read(accountId: string, from: Date, to: Date): Promise<UsageRow[] | null>;
}

const DAY_MS = 86_400_000;

/** UTC midnight of the day `at` falls in, `days` days later (or earlier, when negative). */
export function utcDay(at: Date, days = 0): Date {
  return new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS + days * DAY_MS);
}
