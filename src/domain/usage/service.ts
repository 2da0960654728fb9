import { invalid } from '../errors.js';
import { utcDay, type UsageRow, type UsageStore } from './types.js';

export interface UsageServiceDeps {
  store: UsageStore;
  now?: () => Date;
}

/** Range of a usage query without dates: the last 30 days, today included. */
export const DEFAULT_USAGE_DAYS = 30;
/** Longest range one query may span: bounds the answer. */
export const MAX_USAGE_DAYS = 366;

/**
 * Reading usage, the same for the console and the CLI. Charges and refunds count themselves (in the
 * account's balance update); this service rolls finished days up and answers queries.
 *
 * Only days before yesterday (UTC) are rolled up: an instance whose clock is a little behind may still
 * count a call in yesterday's bucket after midnight, and a bucket must never be counted into once it
 * has moved.
 */
export class UsageService {
  private readonly now: () => Date;

  constructor(private readonly deps: UsageServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * The account's usage per UTC day, service and source, sorted by day, service, source. `from` and
   * `to` are dates (a Date or `YYYY-MM-DD`, UTC, inclusive); by default the last 30 days.
   */
  async forAccount(accountId: unknown, range: { from?: unknown; to?: unknown } = {}): Promise<UsageRow[]> {
    if (typeof accountId !== 'string' || !/^[0-9a-fA-F]{24}$/.test(accountId.trim())) {
      throw invalid('account', 'account must be an account id (24 hexadecimal characters)');
    }
    const id = accountId.trim().toLowerCase();
    const now = this.now();
    const to = range.to === undefined ? utcDay(now) : parseDay('to', range.to);
    const from = range.from === undefined ? utcDay(to, 1 - DEFAULT_USAGE_DAYS) : parseDay('from', range.from);
    if (from > to) throw invalid('from', 'from must not be after to');
    if (utcDay(from, MAX_USAGE_DAYS) <= to) throw invalid('from', `the range must span at most ${MAX_USAGE_DAYS} days`);

    await this.deps.store.rollUp(id, rollUpBefore(now));
    const rows = await this.deps.store.read(id, from, to);
    if (rows === null) throw invalid('account', `account ${id} does not exist`);
    return rows.sort(byDayServiceSource);
  }

  /** Rolls up finished days of at most `limit` accounts; returns how many. */
  rollUpStale(limit = 100): Promise<number> {
    return this.deps.store.rollUpStale(rollUpBefore(this.now()), limit);
  }

  /**
   * Rolls up finished days every `everyMs` (batch after batch while batches are full), so accounts nobody looks at
   * keep small documents too. Any number of instances may do this at once. Returns the stop function.
   */
  startRollUps(opts: { everyMs: number; batch?: number; onError?: (err: unknown) => void }): () => void {
    const batch = opts.batch ?? 100;
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      void (async () => {
        // At most 10 batches a tick: an account whose bucket keeps changing is matched again each batch.
        for (let i = 0; i < 10 && (await this.rollUpStale(batch)) === batch; i++);
      })()
        .catch((err: unknown) => opts.onError?.(err))
        .finally(() => (running = false));
    }, opts.everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}

/** Days before this UTC midnight (yesterday's) are final and may move. */
function rollUpBefore(now: Date): Date {
  return utcDay(now, -1);
}

function parseDay(field: string, value: unknown): Date {
  if (value instanceof Date && !Number.isNaN(value.getTime())) return utcDay(value);
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value.trim())) {
    const day = new Date(`${value.trim()}T00:00:00.000Z`);
    // Round trip: 2024-02-30 parses (as March 1st) but is not a date.
    if (!Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === value.trim()) return day;
  }
  throw invalid(field, `${field} must be a date (YYYY-MM-DD)`);
}

function byDayServiceSource(a: UsageRow, b: UsageRow): number {
  return a.day.getTime() - b.day.getTime() || compare(a.service, b.service) || compare(a.source, b.source);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
