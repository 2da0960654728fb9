// Durability for --dbpath: an append-only journal of BSON records written synchronously before a write
// is acknowledged (the OS keeps it if the process is killed), and a snapshot that startup rewrites from
// the replayed state, so the journal only ever holds writes since the last start.
import fs from 'node:fs';
import path from 'node:path';
import { BSON } from 'bson';
import type { Doc } from './bson-order.js';

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

const SNAPSHOT = 'snapshot.bson';
const JOURNAL = 'journal.bson';

function readRecords(file: string): { records: JournalRecord[]; validBytes: number } {
  if (!fs.existsSync(file)) return { records: [], validBytes: 0 };
  const buf = fs.readFileSync(file);
  const records: JournalRecord[] = [];
  let at = 0;
  while (buf.length - at >= 5) {
    const len = buf.readInt32LE(at);
    // A record cut short by a crash mid-write was never acknowledged; stop there.
    if (len < 5 || at + len > buf.length) break;
    records.push(BSON.deserialize(buf.subarray(at, at + len)) as JournalRecord);
    at += len;
  }
  return { records, validBytes: at };
}

/** Generation number in a file's leading {o:'gen'} record (0 for files written without one). */
function generationOf(records: JournalRecord[]): number {
  const first = records[0];
  return first && first.o === 'gen' ? first.n : 0;
}

/**
 * Snapshot and journal carry a generation number: the journal only applies on top of the snapshot of
 * the same generation, so a crash between writing a new snapshot and truncating the journal cannot
 * replay old writes twice.
 */
export class Journal {
  private fd: number | undefined;
  private generation = 0;
  /** Bytes appended since the last compaction. */
  bytes = 0;

  constructor(private readonly dir: string) {}

  /** Records to replay: the snapshot followed by the journal of the same generation. */
  load(): JournalRecord[] {
    fs.mkdirSync(this.dir, { recursive: true });
    const snap = readRecords(path.join(this.dir, SNAPSHOT)).records;
    const journal = readRecords(path.join(this.dir, JOURNAL)).records;
    this.generation = generationOf(snap);
    const replay = snap.filter((r) => r.o !== 'gen');
    if (generationOf(journal) === this.generation) replay.push(...journal.filter((r) => r.o !== 'gen'));
    return replay;
  }

  /** Replaces snapshot + journal by a fresh snapshot of `records` and opens an empty journal. */
  compact(records: Iterable<JournalRecord>): void {
    const generation = this.generation + 1;
    const tmp = path.join(this.dir, `${SNAPSHOT}.tmp`);
    const fd = fs.openSync(tmp, 'w');
    fs.writeSync(fd, BSON.serialize({ o: 'gen', n: generation }));
    let pending: Buffer[] = [];
    let size = 0;
    const flush = (): void => {
      if (pending.length === 0) return;
      fs.writeSync(fd, Buffer.concat(pending, size));
      pending = [];
      size = 0;
    };
    for (const r of records) {
      const b = Buffer.from(BSON.serialize(r));
      pending.push(b);
      size += b.length;
      if (size > 4 * 1024 * 1024) flush();
    }
    flush();
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(tmp, path.join(this.dir, SNAPSHOT));
    this.generation = generation;
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = fs.openSync(path.join(this.dir, JOURNAL), 'w');
    fs.writeSync(this.fd, BSON.serialize({ o: 'gen', n: generation }));
    this.bytes = 0;
  }

  /** Appends synchronously: the bytes are in the OS before the write is acknowledged. */
  append(records: JournalRecord[]): void {
    if (this.fd === undefined || records.length === 0) return;
    const bufs = records.map((r) => BSON.serialize(r));
    const buf = bufs.length === 1 ? bufs[0] : Buffer.concat(bufs);
    fs.writeSync(this.fd, buf);
    this.bytes += buf.length;
  }

  close(): void {
    if (this.fd === undefined) return;
    fs.fsyncSync(this.fd);
    fs.closeSync(this.fd);
    this.fd = undefined;
  }
}
