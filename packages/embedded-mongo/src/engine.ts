// The storage engine: databases and collections, every mutation (journaled and published as a change
// event), and the cursor registry. Commands run synchronously against it, so each command is atomic.
import { Long, Timestamp, UUID } from 'bson';
import { compareValues, type Doc } from './bson-order.js';
import { bsonSize, documentBytes } from './bson-size.js';
import { Collection, type IndexSpec } from './collection.js';
import { MongoError } from './errors.js';
import { Journal, type JournalRecord, type JournalStats } from './journal.js';
import type { UpdateDescription } from './update.js';

export type ChangeEvent = {
  seq: number;
  db: string;
  coll: string;
  operationType: 'insert' | 'update' | 'replace' | 'delete' | 'drop' | 'dropDatabase' | 'rename' | 'invalidate';
  documentKey?: Doc;
  fullDocument?: Doc;
  fullDocumentBeforeChange?: Doc;
  updateDescription?: UpdateDescription;
  clusterTime: Timestamp;
  wallTime: Date;
  /** BSON size of the event, measured once when it is logged; the change log's bound counts these. */
  bytes: number;
};

export type Cursor = {
  id: bigint;
  ns: string;
  lastUsed: number;
  created: Date;
  /** The command that opened the cursor (currentOp reports it as `originatingCommand`). */
  origin: Doc | undefined;
  docsReturned: number;
  batchesReturned: number;
} & (
  | { kind: 'docs'; docs: Doc[]; pos: number }
  | { kind: 'change'; stream: ChangeStreamState }
);

export type ChangeStreamState = {
  db: string;
  coll: string | undefined;
  /** Last event sequence delivered (or resumed from). */
  after: number;
  fullDocument: string;
  fullDocumentBeforeChange: string;
  transform: (events: Doc[]) => Doc[];
  showExpanded: boolean;
  /** Set when an event this stream would have returned was dropped from the change log before it read it. */
  lost: boolean;
};

/** A document field's bytes in BSON beside its value's: type byte, then `fullDocument` as a C string. */
const FULL_DOCUMENT_FIELD_BYTES = 1 + 'fullDocument'.length + 1;

/** The change log's default bound: the BSON bytes of the events it keeps. */
export const DEFAULT_CHANGELOG_BYTES = 64 * 1024 * 1024;

export type EngineOptions = {
  /** Persist to this directory (journal and snapshot); in memory when unset. */
  dbPath?: string;
  /** Journal size past which it is folded into a new snapshot (see JournalOptions.compactBytes). */
  journalCompactBytes?: number;
  /** BSON bytes of change events kept for change streams to read and resume from (oldest dropped first). */
  changelogBytes?: number;
};

export type ChangelogStats = { events: number; bytes: number; boundBytes: number; oldestEventTime: Date | null };

export class Engine {
  readonly dbs = new Map<string, Map<string, Collection>>();
  readonly uuids = new Map<string, UUID>();
  readonly cursors = new Map<bigint, Cursor>();
  private nextCursorId = BigInt(Date.now() % 1_000_000) * 1000n + 1n;
  /** The command being run, recorded on the cursors it opens. */
  runningCommand: Doc | undefined;
  readonly events: ChangeEvent[] = [];
  private readonly changelogBound: number;
  private changelogBytes = 0;
  /** The cluster time of the newest event that is not in the change log (dropped, or never logged). */
  private lostTime: Timestamp | undefined;
  /** A stream lost its place in this command: its waiting getMore must wake to report it. */
  private streamLost = false;
  private seq = 0;
  private readonly waiters = new Map<() => void, ((db: string, coll: string) => boolean) | undefined>();
  private pending: JournalRecord[] = [];
  private readonly journal: Journal | undefined;
  private replaying = false;
  private clusterSecs = Math.floor(Date.now() / 1000);
  private clusterInc = 0;

  constructor(opts: EngineOptions = {}) {
    this.changelogBound = opts.changelogBytes ?? DEFAULT_CHANGELOG_BYTES;
    if (opts.dbPath) {
      this.journal = new Journal(opts.dbPath, { compactBytes: opts.journalCompactBytes });
      this.replaying = true;
      this.journal.load((r) => {
        try {
          this.replay(r);
        } catch (e) {
          // A record that no longer applies (e.g. an index whose data changed) must not stop startup.
          console.error(`[embedded-mongo] skipped journal record ${r.o}: ${(e as Error).message}`);
        }
      });
      this.replaying = false;
      // A long journal is folded into a snapshot in the background, so the restart after this one is quick.
      if (this.journal.due) void this.journal.compact(() => this.capture());
    }
  }

  // ---- namespaces ----

  getCollection(db: string, name: string): Collection | undefined {
    return this.dbs.get(db)?.get(name);
  }

  /** The collection, created implicitly (as mongod does on first write) when missing. */
  ensureCollection(db: string, name: string, opts: Doc = {}): Collection {
    const existing = this.getCollection(db, name);
    if (existing) return existing;
    validateCollectionName(name);
    let colls = this.dbs.get(db);
    if (!colls) {
      colls = new Map();
      this.dbs.set(db, colls);
    }
    const coll = new Collection(db, name, opts);
    colls.set(name, coll);
    this.uuids.set(coll.ns, new UUID());
    this.log({ o: 'cc', ns: coll.ns, opts });
    return coll;
  }

  dropCollection(db: string, name: string): boolean {
    const colls = this.dbs.get(db);
    const coll = colls?.get(name);
    if (!colls || !coll) return false;
    colls.delete(name);
    this.uuids.delete(coll.ns);
    if (colls.size === 0) this.dbs.delete(db);
    this.log({ o: 'dc', ns: coll.ns });
    this.emit({ db, coll: name, operationType: 'drop' });
    return true;
  }

  dropDatabase(db: string): void {
    const colls = this.dbs.get(db);
    if (!colls) return;
    for (const name of [...colls.keys()]) this.dropCollection(db, name);
    this.dbs.delete(db);
    this.log({ o: 'dd', db });
  }

  renameCollection(fromDb: string, from: string, toDb: string, to: string, dropTarget: boolean): void {
    const src = this.getCollection(fromDb, from);
    if (!src) throw new MongoError(26, 'source namespace does not exist', 'NamespaceNotFound');
    if (this.getCollection(toDb, to)) {
      if (!dropTarget) throw new MongoError(48, 'target namespace exists', 'NamespaceExists');
      this.dropCollection(toDb, to);
    }
    const target = this.ensureCollection(toDb, to, src.options);
    for (const index of src.indexes.slice(1)) this.createIndex(target, { ...index.spec });
    for (const doc of src.docs.values()) this.insert(target, doc);
    this.dropCollection(fromDb, from);
  }

  // ---- documents ----

  insert(coll: Collection, doc: Doc): void {
    coll.insert(doc);
    this.log({ o: 'ins', ns: coll.ns, d: doc });
    this.emit({ db: coll.db, coll: coll.name, operationType: 'insert', documentKey: { _id: doc._id }, fullDocument: doc });
  }

  replace(coll: Collection, rid: number, doc: Doc, description: UpdateDescription | undefined): void {
    coll.replace(rid, doc);
    this.log({ o: 'rep', ns: coll.ns, d: doc });
    this.emit({
      db: coll.db,
      coll: coll.name,
      operationType: description ? 'update' : 'replace',
      documentKey: { _id: doc._id },
      fullDocument: doc,
      updateDescription: description,
    });
  }

  remove(coll: Collection, rid: number): void {
    const doc = coll.docs.get(rid);
    if (!doc) return;
    coll.remove(rid);
    this.log({ o: 'del', ns: coll.ns, id: doc._id });
    this.emit({ db: coll.db, coll: coll.name, operationType: 'delete', documentKey: { _id: doc._id } });
  }

  createIndex(coll: Collection, spec: IndexSpec): void {
    coll.addIndex(spec);
    this.log({ o: 'ci', ns: coll.ns, spec });
  }

  dropIndex(coll: Collection, name: string): boolean {
    const ok = coll.dropIndex(name);
    if (ok) this.log({ o: 'di', ns: coll.ns, name });
    return ok;
  }

  // ---- journal ----

  private log(r: JournalRecord): void {
    if (this.journal && !this.replaying) this.pending.push(r);
  }

  /** Makes the current command's writes durable and wakes change-stream readers; call before replying. */
  commit(): void {
    if (this.pending.length > 0 && this.journal) {
      const records = this.pending;
      this.pending = [];
      this.journal.append(records);
      // Fold the journal into a new snapshot once it outgrows its bound, so restarts stay quick.
      if (this.journal.due) void this.journal.compact(() => this.capture());
    }
    if (this.streamLost) {
      this.streamLost = false;
      this.wakeAll();
    }
    if (this.waiters.size > 0 && this.notifiedSeq < this.seq) {
      // Wake only the streams that can see one of the new events (a stream on one collection does not
      // wake for writes elsewhere); the rest keep waiting without a pass over the events.
      const first = this.events.length - (this.seq - this.notifiedSeq);
      const fresh = this.events.slice(Math.max(0, first));
      for (const [wake, sees] of [...this.waiters]) if (!sees || fresh.some((e) => sees(e.db, e.coll))) wake();
    }
    this.notifiedSeq = this.seq;
  }

  /** The last event sequence whose waiters were woken. */
  private notifiedSeq = 0;

  private replay(r: JournalRecord): void {
    switch (r.o) {
      case 'cc': {
        const [db, name] = split(r.ns);
        this.ensureCollection(db, name, r.opts);
        break;
      }
      case 'dc': {
        const [db, name] = split(r.ns);
        this.dropCollection(db, name);
        break;
      }
      case 'dd':
        this.dropDatabase(r.db);
        break;
      case 'ci': {
        const [db, name] = split(r.ns);
        const coll = this.ensureCollection(db, name);
        if (!coll.indexes.some((i) => i.spec.name === r.spec.name)) coll.addIndex(r.spec as IndexSpec);
        break;
      }
      case 'di': {
        const [db, name] = split(r.ns);
        this.getCollection(db, name)?.dropIndex(r.name);
        break;
      }
      case 'ins': {
        const [db, name] = split(r.ns);
        const coll = this.ensureCollection(db, name);
        // Upsert by _id, so replay is idempotent; looked up only on a clash, as inserts are most records.
        try {
          coll.insert(r.d);
        } catch (e) {
          const rid = coll.findRidById(r.d._id);
          if (rid === undefined) throw e;
          coll.replace(rid, r.d);
        }
        break;
      }
      case 'rep': {
        // Upsert by _id, so replay is idempotent.
        const [db, name] = split(r.ns);
        const coll = this.ensureCollection(db, name);
        const rid = coll.findRidById(r.d._id);
        if (rid !== undefined) coll.replace(rid, r.d);
        else coll.insert(r.d);
        break;
      }
      case 'del': {
        const [db, name] = split(r.ns);
        const coll = this.getCollection(db, name);
        const rid = coll?.findRidById(r.id);
        if (coll && rid !== undefined) coll.remove(rid);
        break;
      }
      case 'gen':
        break;
    }
  }

  /**
   * The state as it is now, as snapshot records produced later: documents are never mutated in place,
   * so copying the references fixes the state while writes go on.
   */
  private capture(): Iterable<JournalRecord> {
    const colls = [...this.dbs.values()].flatMap((byName) =>
      [...byName.values()].map((coll) => ({
        ns: coll.ns,
        opts: coll.options,
        specs: coll.indexes.slice(1).map((index) => ({ ...index.spec })),
        docs: [...coll.docs.values()],
      })),
    );
    return (function* (): Generator<JournalRecord> {
      for (const { ns, opts, specs, docs } of colls) {
        yield { o: 'cc', ns, opts };
        for (const spec of specs) yield { o: 'ci', ns, spec };
        for (const d of docs) yield { o: 'ins', ns, d };
      }
    })();
  }

  journalStats(): JournalStats | undefined {
    return this.journal && { ...this.journal.stats };
  }

  /** Commits, waits for a journal compaction under way, and closes the journal. */
  async close(): Promise<void> {
    this.commit();
    await this.journal?.close();
  }

  // ---- change events ----

  clusterTime(): Timestamp {
    const now = Math.floor(Date.now() / 1000);
    if (now > this.clusterSecs) {
      this.clusterSecs = now;
      this.clusterInc = 0;
    }
    return new Timestamp({ t: this.clusterSecs, i: ++this.clusterInc });
  }

  get lastSeq(): number {
    return this.seq;
  }

  private emit(e: Omit<ChangeEvent, 'seq' | 'clusterTime' | 'wallTime' | 'bytes'>): void {
    if (this.replaying) return;
    // Without an open change stream nobody can ask for history older than "now", so keep none.
    if (!this.hasChangeStreams()) {
      this.notifiedSeq = ++this.seq;
      return;
    }
    // Field by field, not `{ ...e, seq, ... }`: V8 builds a spread copy that then gains fields through
    // its slow path (about 4 µs an event, more than the rest of a write's change-log cost).
    const event: ChangeEvent = {
      db: e.db,
      coll: e.coll,
      operationType: e.operationType,
      documentKey: e.documentKey,
      fullDocument: undefined,
      fullDocumentBeforeChange: e.fullDocumentBeforeChange,
      updateDescription: e.updateDescription,
      seq: ++this.seq,
      clusterTime: this.clusterTime(),
      wallTime: new Date(),
      bytes: 0,
    };
    // The fields it has (an absent one is undefined here), the full document's measured when its write
    // checked it rather than walked again.
    event.bytes = bsonSize(event, true) + (e.fullDocument ? FULL_DOCUMENT_FIELD_BYTES + documentBytes(e.fullDocument) : 0);
    event.fullDocument = e.fullDocument;
    this.events.push(event);
    this.changelogBytes += event.bytes;
    if (this.changelogBytes > this.changelogBound) this.trimChangelog();
  }

  /**
   * Drops the oldest events until the log is back under its bound, always keeping the newest. It drops
   * down to 15/16 of the bound at once (mongod also truncates its oplog in whole chunks): one splice per
   * chunk rather than one per write. A stream that had not read a dropped event it would see loses its
   * place, as on mongod when the oplog rolls over; the others just move past what they would not see.
   */
  private trimChangelog(): void {
    const target = this.changelogBound - this.changelogBound / 16;
    let drop = 0;
    let bytes = this.changelogBytes;
    while (drop < this.events.length - 1 && bytes > target) bytes -= this.events[drop++].bytes;
    if (drop === 0) return;
    const dropped = this.events.splice(0, drop);
    this.changelogBytes = bytes;
    const last = dropped[dropped.length - 1];
    this.lostTime = last.clusterTime;
    for (const c of this.cursors.values()) {
      if (c.kind !== 'change' || c.stream.lost || c.stream.after >= last.seq) continue;
      const stream = c.stream;
      if (dropped.some((d) => d.seq > stream.after && streamSees(stream, d.db, d.coll))) {
        stream.lost = true;
        this.streamLost = true;
      } else {
        stream.after = last.seq;
      }
    }
  }

  private changeStreamsOpened = false;

  /** Event history is only recorded once a change stream has been opened (saves memory otherwise). */
  markChangeStreams(): void {
    // The writes before this one were never logged: a stream cannot start at or before them.
    if (!this.changeStreamsOpened && this.seq > 0) this.lostTime = this.clusterTime();
    this.changeStreamsOpened = true;
  }

  private hasChangeStreams(): boolean {
    return this.changeStreamsOpened;
  }

  changelogStats(): ChangelogStats {
    return { events: this.events.length, bytes: this.changelogBytes, boundBytes: this.changelogBound, oldestEventTime: this.events[0]?.wallTime ?? null };
  }

  /** Events after `seq`, to resume a stream from; throws ChangeStreamHistoryLost when they are no longer kept. */
  eventsAfter(seq: number): ChangeEvent[] {
    if (seq >= this.seq) return [];
    const first = this.events[0];
    if (!first || first.seq > seq + 1) throw historyLost();
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.events[mid].seq <= seq) lo = mid + 1;
      else hi = mid;
    }
    return this.events.slice(lo);
  }

  /**
   * Where a stream resuming at cluster time `ts` starts (the sequence before its first event); throws
   * ChangeStreamHistoryLost when events at or after `ts` are no longer kept.
   */
  seqAtTime(ts: Timestamp): number {
    if (this.lostTime && compareValues(this.lostTime, ts) >= 0) throw historyLost();
    const first = this.events.find((e) => compareValues(e.clusterTime, ts) >= 0);
    return first ? first.seq - 1 : this.seq;
  }

  /**
   * The events an open stream has not read yet. A stream that lost its place gets mongod's error for a
   * tailing cursor whose position was truncated away (CappedPositionLost, which drivers do not resume
   * from: resuming would silently skip the lost events).
   */
  unreadEvents(stream: ChangeStreamState): ChangeEvent[] {
    if (stream.lost) {
      throw new MongoError(
        136,
        `Executor error during getMore :: caused by :: CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(${stream.after})`,
        'CappedPositionLost',
      );
    }
    return this.eventsAfter(stream.after);
  }

  /**
   * Resolves after `ms`, or sooner at the commit of an event that `sees` (by namespace) accepts; any
   * event when `sees` is omitted.
   */
  waitForEvents(ms: number, sees?: (db: string, coll: string) => boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.set(done, sees);
    });
  }

  wakeAll(): void {
    for (const wake of [...this.waiters.keys()]) wake();
  }

  // ---- cursors ----

  openCursor(ns: string, docs: Doc[], pos: number): Long {
    if (pos >= docs.length) return Long.ZERO;
    const id = this.nextCursorId++;
    this.cursors.set(id, { id, ns, kind: 'docs', docs, pos, ...this.cursorOpened(pos) });
    return Long.fromBigInt(id);
  }

  openChangeCursor(ns: string, stream: ChangeStreamState, returned: number): Long {
    const id = this.nextCursorId++;
    this.cursors.set(id, { id, ns, kind: 'change', stream, ...this.cursorOpened(returned) });
    return Long.fromBigInt(id);
  }

  private cursorOpened(returned: number): Pick<Cursor, 'lastUsed' | 'created' | 'origin' | 'docsReturned' | 'batchesReturned'> {
    return { lastUsed: Date.now(), created: new Date(), origin: this.runningCommand, docsReturned: returned, batchesReturned: 1 };
  }

  /** Cursors dropped by reapCursors since startup (serverStatus metrics.cursor.timedOut). */
  timedOutCursors = 0;

  /** Drops cursors idle for longer than mongod's default cursor timeout (10 minutes). */
  reapCursors(now = Date.now()): void {
    for (const [id, c] of this.cursors) {
      if (now - c.lastUsed <= 10 * 60_000) continue;
      this.cursors.delete(id);
      this.timedOutCursors++;
    }
  }
}

/** Whether events of namespace db.coll reach this stream (a collection, a database, or all of them from admin). */
export function streamSees(stream: ChangeStreamState, db: string, coll: string): boolean {
  return (stream.db === 'admin' || db === stream.db) && (stream.coll === undefined || coll === stream.coll);
}

function historyLost(): MongoError {
  return new MongoError(286, 'Resume of change stream was not possible, as the resume point may no longer be in the oplog.', 'ChangeStreamHistoryLost');
}

/** A namespace's database and collection names. */
function split(ns: string): [string, string] {
  const i = ns.indexOf('.');
  return [ns.slice(0, i), ns.slice(i + 1)];
}

export function validateCollectionName(name: string): void {
  if (!name || name.includes('$') || name.startsWith('.') || name.includes('\0')) {
    throw new MongoError(73, `Invalid collection name: ${name}`, 'InvalidNamespace');
  }
}
