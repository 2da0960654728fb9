import { isDatabaseUnavailableError } from '../data/connection.js';
import type { Logger } from '../domain/logger.js';

/**
 * Where the queue's background errors go: Agenda's polls and lock bookkeeping, the change stream, the
 * runner's heartbeats. None of them may escape (an unhandled 'error' event or rejection ends the
 * process). While the database is unreachable every poll fails, several times a second, so an outage
 * is logged once when it starts and then summarized at most once per `summaryEveryMs`, until
 * `recovered()` (the driver reconnected). Other errors are logged one by one.
 */
export class QueueErrorLog {
  private outage?: { since: number; lastLoggedAt: number; errors: number; kinds: Set<string> };

  constructor(
    private readonly log: Logger,
    private readonly summaryEveryMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  report(err: unknown, source: string): void {
    if (!isDatabaseUnavailableError(err)) {
      this.log.warn({ err: describeError(err), source }, 'queue error');
      return;
    }
    const now = this.now();
    const outage = this.outage;
    if (!outage) {
      this.outage = { since: now, lastLoggedAt: now, errors: 0, kinds: new Set() };
      this.log.warn({ err: describeError(err), source }, 'queue paused: database unreachable');
      return;
    }
    outage.errors++;
    outage.kinds.add(errorName(err));
    if (now - outage.lastLoggedAt >= this.summaryEveryMs) {
      this.log.warn({ errors: outage.errors, kinds: [...outage.kinds], downForMs: now - outage.since }, 'queue still paused: database unreachable');
      outage.lastLoggedAt = now;
      outage.errors = 0;
      outage.kinds.clear();
    }
  }

  /** The database is reachable again: the next database error starts a new outage. */
  recovered(): void {
    if (!this.outage) return;
    this.log.info({ downForMs: this.now() - this.outage.since }, 'queue resumed: database reachable');
    this.outage = undefined;
  }
}

export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function errorName(err: unknown): string {
  const name = (err as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : typeof err;
}
