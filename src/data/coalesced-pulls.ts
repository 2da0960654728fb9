import type { AnyBulkWriteOperation, Collection, Document, ObjectId } from 'mongodb';

/**
 * Values to `$pull` from one array field of many documents, gathered for a short window and written
 * together: one `$pull` with `$in` per document, all documents in one bulkWrite (one round trip).
 * For bookkeeping nobody waits on in a request (a capped key's confirmed reservations, the account's
 * one-shot op ids): a charge answered at 1,000 per second costs one write per window instead of one
 * per charge. Each `pull` resolves once its value's write is done (and rejects if it failed: the
 * caller's repair, a sweep, takes over).
 */
export class CoalescedPulls<T extends Document> {
  private batch = new Map<string, { id: ObjectId; values: string[]; waiters: { resolve: () => void; reject: (err: unknown) => void }[] }>();
  private timer?: NodeJS.Timeout;
  private readonly writing = new Set<Promise<void>>();

  constructor(
    private readonly collection: Collection<T>,
    /** The `$pull` condition for some values (e.g. `{ ops: { $in: values } }`). */
    private readonly pullOf: (values: string[]) => Document,
    private readonly windowMs = 20,
  ) {}

  pull(id: ObjectId, value: string): Promise<void> {
    const key = id.toHexString();
    let entry = this.batch.get(key);
    if (!entry) {
      entry = { id, values: [], waiters: [] };
      this.batch.set(key, entry);
    }
    entry.values.push(value);
    const done = new Promise<void>((resolve, reject) => entry.waiters.push({ resolve, reject }));
    this.timer ??= setTimeout(() => void this.flush(), this.windowMs);
    return done;
  }

  /** Writes what is gathered now and waits for every write in flight (shutdown, tests). */
  async drain(): Promise<void> {
    await this.flush();
    await Promise.all([...this.writing]);
  }

  private flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const entries = [...this.batch.values()];
    this.batch = new Map();
    if (entries.length === 0) return Promise.resolve();
    const ops = entries.map((e) => ({ updateOne: { filter: { _id: e.id }, update: { $pull: this.pullOf(e.values) } } })) as AnyBulkWriteOperation<T>[];
    const written = this.collection.bulkWrite(ops, { ordered: false }).then(
      () => entries.forEach((e) => e.waiters.forEach((w) => w.resolve())),
      (err: unknown) => entries.forEach((e) => e.waiters.forEach((w) => w.reject(err))),
    );
    this.writing.add(written);
    void written.finally(() => this.writing.delete(written));
    return written;
  }
}
