// Durability for --dbpath: an append-only journal of BSON records written synchronously before a write
// is acknowledged (the OS keeps it if the process is killed), and a snapshot of the whole state that
// replaces the journal once the journal outgrows it, so that restarts replay a bounded amount.
//
// Files, each starting with an {o:'gen', n} record:
//   snapshot.bson         the state when journal.<n>.bson was started (n: the snapshot's generation)
//   journal.<g>.bson      writes since the state was copied for snapshot g (g >= n; the highest is open)
// Startup replays the snapshot, then every journal of its generation or later in generation order.
// Compaction starts journal g+1 and copies the state in the same turn of the event loop, writes
// snapshot g+1 to a temporary file in slices while the server keeps serving, fsyncs and renames it,
// and only then deletes the journals it covers. A kill at any point leaves files that replay to every
// acknowledged write, and never applies a journal twice: an older journal's generation is below the
// snapshot that covers it.
import fs from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { BSON } from 'bson';
import { decodeBson, type Doc } from './bson-order.js';

export type JournalRecord =
  | { o: 'cc'; ns: string; opts: Doc }
  | { o: 'dc'; ns: string }
  | { o: 'dd'; db: string }
  | { o: 'ci'; ns: string; spec: Doc }
  | { o: 'di'; ns: string; name: string }
  | { o: 'ins'; ns: string; d: Doc }
  | { o: 'rep'; ns: string; d: Doc }
  | { o: 'del'; ns: string; id: unknown }
  | { o: 'gen'; n: number };

export type JournalOptions = {
  /**
   * Compact once the journal holds more than this many bytes and more than the last snapshot (a
   * snapshot costs as much as the state it copies, so a larger state waits for a longer journal).
   */
  compactBytes?: number;
};

export type JournalStats = {
  /** Bytes in the open journal (during a compaction, the older journal is still on disk beside it). */
  bytes: number;
  snapshotBytes: number;
  /** Whether a compaction is under way (its snapshot not yet in place). */
  compacting: boolean;
  /** Compactions finished since the start. */
  compactions: number;
  /** From the start of the last compaction until its snapshot was in place. */
  lastCompactionMs: number;
  /** Longest stretch the last compaction held the event loop (state copy, or one serialization slice). */
  lastCompactionLongestPauseMs: number;
};

export const DEFAULT_COMPACT_BYTES = 64 * 1024 * 1024;
const SNAPSHOT = 'snapshot.bson';
const JOURNAL_NAME = /^journal(\.\d+)?\.bson$/;
const READ_CHUNK = 1024 * 1024;
/** A serialization slice ends at whichever comes first; then the event loop runs while the slice is written. */
const SLICE_BYTES = 4 * 1024 * 1024;
const SLICE_MS = 10;

const journalFile = (generation: number): string => `journal.${generation}.bson`;
const genRecord = (n: number): Uint8Array => BSON.serialize({ o: 'gen', n });

/**
 * Reads a file of BSON records one at a time, holding one chunk (or one record, if larger) in memory.
 * The leading {o:'gen'} record is read on open and not returned by next().
 */
class RecordReader {
  private buf = Buffer.alloc(0);
  private at = 0;
  private readPos = 0;
  /** Bytes of whole records read so far; a record cut short by a crash mid-write ends the file. */
  validBytes = 0;
  /** The file's generation (0 for a file without a leading gen record). */
  readonly generation: number;
  /** Whether the file holds at least one whole record. */
  readonly empty: boolean;
  private first: JournalRecord | undefined;

  constructor(
    private readonly fd: number,
    private readonly size: number,
  ) {
    this.first = this.read();
    this.empty = this.first === undefined;
    if (this.first?.o === 'gen') {
      this.generation = this.first.n;
      this.first = undefined;
    } else this.generation = 0;
  }

  static open(file: string): RecordReader {
    const fd = fs.openSync(file, 'r');
    return new RecordReader(fd, fs.fstatSync(fd).size);
  }

  next(): JournalRecord | undefined {
    if (this.first) {
      const r = this.first;
      this.first = undefined;
      return r;
    }
    return this.read();
  }

  close(): void {
    fs.closeSync(this.fd);
  }

  private read(): JournalRecord | undefined {
    if (!this.fill(4)) return undefined;
    const len = this.buf.readInt32LE(this.at);
    // An unacknowledged record cut short by a crash: the file ends before it does.
    if (len < 5 || this.validBytes + len > this.size || !this.fill(len)) return undefined;
    // Deserialized from its own copy: Binary values are views into the bytes they were read from,
    // and must not keep a whole chunk alive.
    const bytes = Uint8Array.prototype.slice.call(this.buf, this.at, this.at + len);
    this.at += len;
    this.validBytes += len;
    return decodeBson(bytes) as JournalRecord;
  }

  /** Makes `n` bytes available at `at`; false at the end of the file. */
  private fill(n: number): boolean {
    if (this.buf.length - this.at >= n) return true;
    const rest = this.buf.subarray(this.at);
    const next = Buffer.allocUnsafe(Math.max(READ_CHUNK, n));
    rest.copy(next);
    let filled = rest.length;
    while (filled < n && this.readPos < this.size) {
      const got = fs.readSync(this.fd, next, filled, Math.min(next.length - filled, this.size - this.readPos), this.readPos);
      if (got === 0) break;
      filled += got;
      this.readPos += got;
    }
    this.buf = next.subarray(0, filled);
    this.at = 0;
    return filled >= n;
  }
}

export class Journal {
  private fd: number | undefined;
  /** Generation of the open journal. */
  private generation = 0;
  /** Journals not yet covered by a snapshot in place, by generation (the open one last). */
  private journals: Array<{ generation: number; file: string }> = [];
  private compacting: Promise<void> | undefined;
  private readonly compactBytes: number;
  /** After a compaction could not start (e.g. disk full), the next try waits for this many journal bytes. */
  private retryAtBytes = 0;
  readonly stats: JournalStats = { bytes: 0, snapshotBytes: 0, compacting: false, compactions: 0, lastCompactionMs: 0, lastCompactionLongestPauseMs: 0 };

  constructor(
    private readonly dir: string,
    opts: JournalOptions = {},
  ) {
    this.compactBytes = opts.compactBytes ?? DEFAULT_COMPACT_BYTES;
  }

  /**
   * Streams every durable record into `apply` in order (snapshot first, then the journals that follow
   * it) and opens the newest journal for appending.
   */
  load(apply: (r: JournalRecord) => void): void {
    fs.mkdirSync(this.dir, { recursive: true });
    const drain = (reader: RecordReader): void => {
      try {
        for (let r = reader.next(); r; r = reader.next()) if (r.o !== 'gen') apply(r);
      } finally {
        reader.close();
      }
    };

    const snapshotFile = path.join(this.dir, SNAPSHOT);
    let snapshotGeneration = 0;
    if (fs.existsSync(snapshotFile)) {
      const reader = RecordReader.open(snapshotFile);
      snapshotGeneration = reader.generation;
      drain(reader);
      this.stats.snapshotBytes = reader.validBytes;
    }

    const found = fs
      .readdirSync(this.dir)
      .filter((name) => JOURNAL_NAME.test(name))
      .map((name) => ({ file: path.join(this.dir, name), reader: RecordReader.open(path.join(this.dir, name)) }));
    const live: Array<{ file: string; reader: RecordReader }> = [];
    for (const j of found) {
      // Older than the snapshot: a compaction had covered it and was killed before deleting it.
      // Empty: a compaction was killed before the journal's first record.
      if (j.reader.empty || j.reader.generation < snapshotGeneration) {
        j.reader.close();
        fs.rmSync(j.file);
      } else live.push(j);
    }
    live.sort((a, b) => a.reader.generation - b.reader.generation);
    this.stats.bytes = 0;
    for (const j of live) {
      drain(j.reader);
      this.stats.bytes += j.reader.validBytes;
      this.journals.push({ generation: j.reader.generation, file: j.file });
    }

    const open = live.at(-1);
    if (open) {
      // Appends must follow the last whole record, or a torn tail would hide every later one.
      fs.truncateSync(open.file, open.reader.validBytes);
      this.fd = fs.openSync(open.file, 'a');
      this.generation = open.reader.generation;
    } else {
      this.generation = snapshotGeneration;
      const file = path.join(this.dir, journalFile(this.generation));
      this.fd = fs.openSync(file, 'w');
      this.stats.bytes = fs.writeSync(this.fd, genRecord(this.generation));
      this.journals.push({ generation: this.generation, file });
    }
  }

  /** Appends synchronously: the bytes are in the OS before the write is acknowledged. */
  append(records: JournalRecord[]): void {
    if (this.fd === undefined || records.length === 0) return;
    const bufs = records.map((r) => BSON.serialize(r));
    const buf = bufs.length === 1 ? bufs[0] : Buffer.concat(bufs);
    fs.writeSync(this.fd, buf);
    this.stats.bytes += buf.length;
  }

  /** Whether the journal has outgrown its bound and no compaction is under way. */
  get due(): boolean {
    return this.fd !== undefined && this.compacting === undefined && this.stats.bytes > Math.max(this.compactBytes, this.stats.snapshotBytes, this.retryAtBytes);
  }

  /**
   * Replaces the snapshot and journals by a snapshot of `capture()`, called now, which must return the
   * state as it is at this moment (the records are serialized later, while writes go on). Resolves once
   * the snapshot is in place; a failure is logged and leaves the files as they were (still complete).
   */
  compact(capture: () => Iterable<JournalRecord>): Promise<void> {
    if (this.fd === undefined) return Promise.resolve();
    if (this.compacting) return this.compacting;
    const started = performance.now();
    const generation = this.generation + 1;
    const file = path.join(this.dir, journalFile(generation));
    // The new journal and the copy of the state start in the same turn, so no write falls between them.
    let fd: number | undefined;
    let headerBytes: number;
    try {
      fd = fs.openSync(file, 'w');
      headerBytes = fs.writeSync(fd, genRecord(generation));
    } catch (e) {
      // Nothing has switched: writes go on to the current journal. A file left without a whole header
      // record is removed at the next start.
      if (fd !== undefined) fs.closeSync(fd);
      this.retryAtBytes = this.stats.bytes + this.compactBytes;
      console.error(`[embedded-mongo] journal compaction could not start: ${(e as Error).message}`);
      return Promise.resolve();
    }
    fs.closeSync(this.fd);
    this.fd = fd;
    this.generation = generation;
    this.journals.push({ generation, file });
    const records = capture();
    const pause = performance.now() - started;
    this.stats.bytes = headerBytes;
    this.stats.compacting = true;
    this.retryAtBytes = 0;
    this.compacting = this.writeSnapshot(generation, records, pause)
      .then(({ bytes, longestPauseMs }) => {
        // Only now may the journals the snapshot covers go: until the rename they were needed.
        for (const j of this.journals.filter((x) => x.generation < generation)) fs.rmSync(j.file, { force: true });
        this.journals = this.journals.filter((x) => x.generation >= generation);
        Object.assign(this.stats, {
          snapshotBytes: bytes,
          compactions: this.stats.compactions + 1,
          lastCompactionMs: performance.now() - started,
          lastCompactionLongestPauseMs: longestPauseMs,
        });
      })
      .catch((e: unknown) => {
        // Snapshot and journals on disk still replay to the full state; the next compaction retries.
        console.error(`[embedded-mongo] journal compaction failed: ${(e as Error).message}`);
      })
      .finally(() => {
        this.compacting = undefined;
        this.stats.compacting = false;
      });
    return this.compacting;
  }

  /** Writes the snapshot in slices, yielding to the event loop while each slice goes to disk. */
  private async writeSnapshot(generation: number, records: Iterable<JournalRecord>, pauseSoFar: number): Promise<{ bytes: number; longestPauseMs: number }> {
    const tmp = path.join(this.dir, `${SNAPSHOT}.tmp`);
    const out = await fs.promises.open(tmp, 'w');
    let longestPauseMs = pauseSoFar;
    let bytes = 0;
    let written = false;
    try {
      const it = records[Symbol.iterator]();
      let parts: Uint8Array[] = [genRecord(generation)];
      let size = parts[0].length;
      for (let done = false; !done; ) {
        await nextTurn();
        const sliceStart = performance.now();
        for (let n = 0; size < SLICE_BYTES; n++) {
          if ((n & 255) === 255 && performance.now() - sliceStart > SLICE_MS) break;
          const r = it.next();
          if (r.done) {
            done = true;
            break;
          }
          const b = BSON.serialize(r.value);
          parts.push(b);
          size += b.length;
        }
        const chunk = Buffer.concat(parts, size);
        longestPauseMs = Math.max(longestPauseMs, performance.now() - sliceStart);
        parts = [];
        size = 0;
        await out.write(chunk);
        bytes += chunk.length;
      }
      await out.sync();
      written = true;
    } finally {
      await out.close();
      if (!written) await fs.promises.rm(tmp, { force: true });
    }
    await fs.promises.rename(tmp, path.join(this.dir, SNAPSHOT));
    return { bytes, longestPauseMs };
  }

  /** Waits for a compaction under way, then makes the journal durable and closes it. */
  async close(): Promise<void> {
    await this.compacting;
    if (this.fd === undefined) return;
    fs.fsyncSync(this.fd);
    fs.closeSync(this.fd);
    this.fd = undefined;
  }
}
