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
  | { o: 'rn'; from: string; to: string };

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

export class Journal {
  private fd: number | undefined;

  constructor(private readonly dir: string) {}

  /** Records to replay: the snapshot followed by the journal. */
  load(): JournalRecord[] {
    fs.mkdirSync(this.dir, { recursive: true });
    const snap = readRecords(path.join(this.dir, SNAPSHOT));
    const journal = readRecords(path.join(this.dir, JOURNAL));
    return [...snap.records, ...journal.records];
  }

  /** Replaces snapshot + journal by a fresh snapshot of `records` and opens an empty journal. */
  compact(records: Iterable<JournalRecord>): void {
    const tmp = path.join(this.dir, `${SNAPSHOT}.tmp`);
    const fd = fs.openSync(tmp, 'w');
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
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = fs.openSync(path.join(this.dir, JOURNAL), 'w');
  }

  append(records: JournalRecord[]): void {
    if (this.fd === undefined || records.length === 0) return;
    const bufs = records.map((r) => BSON.serialize(r));
    fs.writeSync(this.fd, bufs.length === 1 ? bufs[0] : Buffer.concat(bufs));
  }

  close(): void {
    if (this.fd === undefined) return;
    fs.fsyncSync(this.fd);
    fs.closeSync(this.fd);
    this.fd = undefined;
  }
}
