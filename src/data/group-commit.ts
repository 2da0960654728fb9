/**
 * Group commit of guarded updates to one document: while a write to a document is in flight, the
 * changes that arrive for it wait and then go together, as one write, once it is done. Nothing waits
 * on a timer: a document nobody else writes gets each change at once, alone (`writeOne`); a hot one
 * (many concurrent charges of one account) gets one write per round trip instead of one per change.
 *
 * `writeMany` gets the waiting changes in the order they arrived and answers each (in that order). It
 * decides how they are written; the stores write them as one guarded update that applies all or none,
 * and when none, one at a time in that order, so that every change gets the outcome a one-at-a-time
 * order would give it. A failed write (the database) fails each change it carried, and only those:
 * each outcome is settled on its own.
 */
/** One change's outcome in a group: its result, or the failure of the write that carried it. */
export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

export class GroupCommit<C, R> {
  private readonly lanes = new Map<string, { waiting: { change: C; resolve: (r: R) => void; reject: (err: unknown) => void }[] }>();

  constructor(
    private readonly writeOne: (change: C) => Promise<R>,
    private readonly writeMany: (changes: C[]) => Promise<Settled<R>[]>,
    /** At most this many changes per write (each one's part of the update stays small). */
    private readonly maxBatch = 64,
  ) {}

  submit(documentKey: string, change: C): Promise<R> {
    const lane = this.lanes.get(documentKey);
    if (lane) return new Promise<R>((resolve, reject) => lane.waiting.push({ change, resolve, reject }));
    this.lanes.set(documentKey, { waiting: [] });
    const first = this.writeOne(change);
    void first.then(
      () => this.next(documentKey),
      () => this.next(documentKey),
    );
    return first;
  }

  /** The write in flight is done: the changes that waited for it go now, in one write. */
  private next(documentKey: string): void {
    const lane = this.lanes.get(documentKey)!;
    if (lane.waiting.length === 0) {
      this.lanes.delete(documentKey);
      return;
    }
    const batch = lane.waiting.splice(0, this.maxBatch);
    const written: Promise<Settled<R>[]> =
      batch.length === 1
        ? this.writeOne(batch[0]!.change).then(
            (value) => [{ ok: true, value }],
            (error: unknown) => [{ ok: false, error }],
          )
        : this.writeMany(batch.map((w) => w.change)).catch((error: unknown) => batch.map(() => ({ ok: false, error }) as const));
    void written
      .then((results) => batch.forEach((w, i) => (results[i]!.ok ? w.resolve(results[i].value) : w.reject(results[i]!.error))))
      .finally(() => this.next(documentKey));
  }
}

/**
 * The usual `writeMany`: `together` writes all the changes as one guarded update, all or none, and
 * answers their results, or null when it matched nothing; then each is written alone (`one`), in the
 * order they came. After a failed write the rest are not tried: each gets that failure.
 */
export async function togetherOrEach<C, R>(changes: C[], together: (cs: C[]) => Promise<R[] | null>, one: (c: C) => Promise<R>): Promise<Settled<R>[]> {
  try {
    const all = await together(changes);
    if (all) return all.map((value) => ({ ok: true, value }));
  } catch (error) {
    return changes.map(() => ({ ok: false, error }));
  }
  const results: Settled<R>[] = [];
  for (const c of changes) {
    const failed = results.find((r) => !r.ok);
    results.push(failed ?? (await one(c).then((value) => ({ ok: true, value }) as const, (error: unknown) => ({ ok: false, error }) as const)));
  }
  return results;
}
