import type { KeyStore } from './records.js';

/** How often pending lastUsedAt values are looked at (each key is still written at most once per interval). */
const FLUSH_TICK_MS = 1000;

/**
 * Coalesces lastUsedAt: the latest use per key is kept in memory and written by a timer, at most once
 * per interval per key, never on the request's path.
 */
export class LastUsedRecorder {
  private readonly lastWritten = new Map<string, number>();
  private readonly pending = new Map<string, Date>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly deps: {
      keys: Pick<KeyStore, 'recordUse'>;
      /** lastUsedAt is written at most this often per key. */
      intervalMs?: number;
      now?: () => Date;
      /** Failures of the background writes (they never fail a request). */
      onError?: (err: unknown) => void;
    },
  ) {}

  note(keyId: string): void {
    this.pending.set(keyId, this.deps.now ? this.deps.now() : new Date());
    this.schedule();
  }

  /** Writes every pending value now (tests, shutdown). */
  async flush(): Promise<void> {
    await this.flushing;
    await this.write(true);
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.write(false).finally(() => (this.flushing = undefined));
    }, FLUSH_TICK_MS);
    this.timer.unref();
  }

  private async write(all: boolean): Promise<void> {
    const interval = this.deps.intervalMs ?? 60_000;
    const nowMs = Date.now();
    const due: { keyId: string; at: Date }[] = [];
    for (const [keyId, at] of this.pending) {
      const last = this.lastWritten.get(keyId);
      if (all || last === undefined || nowMs - last >= interval) {
        due.push({ keyId, at });
        this.pending.delete(keyId);
        this.lastWritten.set(keyId, nowMs);
      }
    }
    for (const [keyId, last] of this.lastWritten) if (nowMs - last >= interval && !this.pending.has(keyId)) this.lastWritten.delete(keyId);
    if (due.length) {
      try {
        await this.deps.keys.recordUse(due);
      } catch (err) {
        this.deps.onError?.(err);
      }
    }
    // Uses not yet due wait for a later tick.
    if (this.pending.size && !all) this.schedule();
  }
}
