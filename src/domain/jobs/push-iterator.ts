/**
 * A queue-backed async iterator that producers push into; return() releases it immediately. Written by
 * hand rather than as an async generator: a generator suspended in an await cannot be returned early,
 * and a client that unsubscribes must release its listener at once.
 */
export class PushIterator<T> implements AsyncIterableIterator<T> {
  private readonly values: T[] = [];
  private readonly waiters: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }[] = [];
  private done = false;
  private error: { reason: unknown } | null = null;
  private closers: (() => void)[] = [];

  onClose(fn: () => void): void {
    this.closers.push(fn);
  }

  push(value: T): void {
    if (this.done || this.error) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve({ value, done: false });
    else this.values.push(value);
  }

  /** Ends after the values already pushed have been read. */
  end(): void {
    if (this.done) return;
    this.done = true;
    this.release();
    this.flush();
  }

  /** Fails after the values already pushed have been read. */
  fail(reason: unknown): void {
    if (this.done || this.error) return;
    this.error = { reason };
    this.release();
    this.flush();
  }

  /** Ends now, dropping unread values. */
  close(): void {
    this.values.length = 0;
    this.end();
  }

  next(): Promise<IteratorResult<T>> {
    const value = this.values.shift();
    if (value !== undefined) return Promise.resolve({ value, done: false });
    if (this.error) {
      const { reason } = this.error;
      this.error = null;
      this.done = true;
      return Promise.reject(reason);
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(err?: unknown): Promise<IteratorResult<T>> {
    this.close();
    return Promise.reject(err);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  private flush(): void {
    // Only reached with no buffered values (a waiter exists only when the buffer is empty).
    while (this.waiters.length) {
      const waiter = this.waiters.shift()!;
      if (this.error) {
        const { reason } = this.error;
        this.error = null;
        this.done = true;
        waiter.reject(reason);
      } else {
        waiter.resolve({ value: undefined, done: true });
      }
    }
  }

  private release(): void {
    const closers = this.closers;
    this.closers = [];
    for (const fn of closers) fn();
  }
}
