import type { EmailOutboxStore, OutboxEntry } from './ports.js';

/** Sends the email of one outbox entry; throws when it could not (the entry is tried again later). */
export type OutboxHandler = (entry: OutboxEntry) => Promise<void>;

const DEFAULT_CLAIM_MS = 60_000;
const FIRST_RETRY_MS = 5_000;
const LAST_RETRY_MS = 15 * 60_000;
const MAX_ATTEMPTS = 10;
const STOP_WAIT_MS = 5_000;

/**
 * Emails sent after the answer: a request writes its entry (durable), answers, and the entry is sent in
 * the background, so the answer never waits for the mail server, nor tells by its time whether an
 * email went out. The writer claims its entry for a while; if it stops before sending (a crash, a
 * restart), the claim lapses and any gateway's sweep sends it. At least once: a gateway that stops
 * after the mail server accepted and before the entry is removed sends it twice, never zero times.
 */
export class EmailOutbox {
  private readonly now: () => Date;
  private readonly claimMs: number;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly deps: {
      store: EmailOutboxStore;
      /** One per kind of entry. */
      handlers: Readonly<Record<string, OutboxHandler>>;
      /** How long an entry's claim lasts before another gateway may send it (default a minute). */
      claimMs?: number;
      now?: () => Date;
      /** Told of a failed send (it is retried) or of an entry given up after its last attempt. */
      onError?: (err: unknown, entry: OutboxEntry, givenUp: boolean) => void;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
    this.claimMs = deps.claimMs ?? DEFAULT_CLAIM_MS;
  }

  /** Stores the entry and sends it after the caller's answer; resolves once it is durable. */
  async enqueue(kind: string, to: string, data: OutboxEntry['data']): Promise<void> {
    if (!this.deps.handlers[kind]) throw new Error(`email outbox: no handler for ${kind}`);
    const now = this.now();
    const entry = await this.deps.store.insert({ kind, to, data, createdAt: now }, new Date(now.getTime() + this.claimMs));
    setImmediate(() => this.track(this.deliver(entry)));
  }

  /** Sends the entries that are due (left by a stopped gateway, or waiting for a retry); how many. */
  async sweep(stopped: () => boolean = () => false, limit = 50): Promise<number> {
    let sent = 0;
    for (; sent < limit && !stopped(); sent++) {
      const now = this.now();
      const entry = await this.deps.store.claimDue(now, new Date(now.getTime() + this.claimMs));
      if (!entry) break;
      await this.deliver(entry);
    }
    return sent;
  }

  /**
   * Sweeps now and every `everyMs`. The returned stop waits a few seconds for the sends under way; one
   * that takes longer (a mail server that does not answer) stays claimed in the outbox, and is sent
   * once its claim lapsed, by another gateway or by this one after a restart.
   */
  start(opts: { everyMs: number; onError: (err: unknown) => void }): () => Promise<void> {
    let stopped = false;
    const run = () => {
      if (!stopped) this.track(this.sweep(() => stopped).then(() => undefined, opts.onError));
    };
    const timer = setInterval(run, opts.everyMs);
    timer.unref();
    run();
    return async () => {
      stopped = true;
      clearInterval(timer);
      let timeout: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(this.inFlight), new Promise((resolve) => (timeout = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(timeout);
    };
  }

  private track(delivery: Promise<void>): Promise<void> {
    this.inFlight.add(delivery);
    return delivery.finally(() => this.inFlight.delete(delivery));
  }

  private async deliver(entry: OutboxEntry): Promise<void> {
    try {
      await this.deps.handlers[entry.kind]!(entry);
    } catch (err) {
      const givenUp = entry.attempts >= MAX_ATTEMPTS;
      this.deps.onError?.(err, entry, givenUp);
      const backoff = Math.min(FIRST_RETRY_MS * 2 ** (entry.attempts - 1), LAST_RETRY_MS);
      await (givenUp ? this.deps.store.remove(entry.id) : this.deps.store.retryAt(entry.id, new Date(this.now().getTime() + backoff))).catch((e: unknown) => this.deps.onError?.(e, entry, givenUp));
      return;
    }
    await this.deps.store.remove(entry.id).catch((e: unknown) => this.deps.onError?.(e, entry, false));
  }
}
