// The --dbpath journal through real processes (`npm run db`'s entry point, whatever MONGODB_URI says):
// a server killed with SIGKILL restarts from a journal of any length, and compaction keeps the journal
// bounded while writes go on without losing any of them to a kill right after it.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { MongoClient, type Document } from 'mongodb';
import { startCliServer, stopProcess } from './helpers/cli-server.js';
import { until } from './helpers/until.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-journal-restart-'));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

type JournalStats = { bytes: number; snapshotBytes: number; compacting: boolean; compactions: number };

async function journalStats(client: MongoClient): Promise<JournalStats> {
  const status = await client.db('admin').command({ serverStatus: 1 });
  return status.journal as JournalStats;
}

const journalBytesOnDisk = (dir: string): number =>
  fs
    .readdirSync(dir)
    .filter((f) => /^journal(\.\d+)?\.bson$/.test(f))
    .reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0);

it('restarts after SIGKILL from a 300,000-record journal with every document back', async () => {
  const dbpath = path.join(tmp, 'large');
  const total = 300_000;
  // No compaction during the fill: the restart must replay all 300,000 records from the journal.
  const first = await startCliServer([`--dbpath=${dbpath}`, `--journal-compact-bytes=${1024 ** 4}`], children);
  const client = await MongoClient.connect(first.uri);
  const items = client.db('big').collection('items');
  const batch = 2_000;
  for (let i = 0; i < total; i += batch) {
    await items.insertMany(
      Array.from({ length: batch }, (_, j) => ({ n: i + j, tag: `t${(i + j) % 97}` })),
      { ordered: false },
    );
  }
  const before = await journalStats(client);
  expect(before.compactions).toBe(0);
  expect(before.snapshotBytes).toBe(0);
  await stopProcess(first.child);
  await client.close(true).catch(() => undefined);

  const second = await startCliServer([`--dbpath=${dbpath}`, `--journal-compact-bytes=${1024 ** 4}`], children);
  const again = await MongoClient.connect(second.uri);
  try {
    const back = again.db('big').collection('items');
    expect(await back.countDocuments()).toBe(total);
    // Every n from 0 to total-1: the count, the sum and the bounds agree, and samples read back whole.
    const [all] = await back.aggregate<Document>([{ $group: { _id: null, sum: { $sum: '$n' }, min: { $min: '$n' }, max: { $max: '$n' } } }]).toArray();
    expect(all).toEqual({ _id: null, sum: (total * (total - 1)) / 2, min: 0, max: total - 1 });
    for (const n of [0, 1, 96_321, 150_000, total - 1]) {
      expect(await back.findOne({ n }, { projection: { _id: 0 } })).toEqual({ n, tag: `t${n % 97}` });
    }
    expect((await journalStats(again)).bytes).toBe(before.bytes);
  } finally {
    await again.close();
    await stopProcess(second.child);
  }
}, 180_000);

it('keeps the journal bounded by compacting while writes go on, and loses nothing to SIGKILL right after a compaction', async () => {
  const dbpath = path.join(tmp, 'bounded');
  const compactBytes = 256 * 1024;
  const docs = 500;
  const first = await startCliServer([`--dbpath=${dbpath}`, `--journal-compact-bytes=${compactBytes}`], children);
  const client = await MongoClient.connect(first.uri);
  const items = client.db('small').collection('items');
  await items.insertMany(Array.from({ length: docs }, (_, n) => ({ n, qty: 0, pad: 'p'.repeat(20) })));

  // Each round rewrites every document: about 40 KiB of journal, while the state stays 500 documents.
  // A round that starts a compaction waits for it, so the bound is exact: writes made during a
  // compaction add to the next journal (journal.test.ts covers them).
  let rounds = 0;
  const round = async (): Promise<void> => {
    await items.updateMany({}, { $inc: { qty: 1 } });
    rounds++;
    let after = await journalStats(client);
    await until(async () => !(after = await journalStats(client)).compacting, 'the compaction to finish');
    // The write that passes the bound starts a compaction, which leaves a journal with nothing in it.
    expect(journalBytesOnDisk(dbpath)).toBe(after.bytes);
    expect(after.bytes).toBeLessThanOrEqual(compactBytes);
  };
  while (rounds < 150) await round();
  const { compactions, snapshotBytes } = await journalStats(client);
  // 150 rounds write about 6 MiB through a 256 KiB bound.
  expect(compactions).toBeGreaterThanOrEqual(10);
  expect(snapshotBytes).toBeLessThan(compactBytes);

  // Rounds until one more compaction has finished (its snapshot renamed into place, the old journal
  // deleted), then one acknowledged write on top, then the kill.
  await until(async () => {
    if ((await journalStats(client)).compactions > compactions) return true;
    await round();
    return false;
  }, 'one more compaction');
  await items.insertOne({ n: docs, qty: rounds, pad: 'after the compaction' });
  await stopProcess(first.child);
  await client.close(true).catch(() => undefined);

  const second = await startCliServer([`--dbpath=${dbpath}`, `--journal-compact-bytes=${compactBytes}`], children);
  const again = await MongoClient.connect(second.uri);
  try {
    const back = again.db('small').collection('items');
    expect(await back.countDocuments()).toBe(docs + 1);
    expect(await back.countDocuments({ qty: rounds })).toBe(docs + 1);
    expect(await back.findOne({ n: docs }, { projection: { _id: 0 } })).toEqual({ n: docs, qty: rounds, pad: 'after the compaction' });
  } finally {
    await again.close();
    await stopProcess(second.child);
  }
}, 180_000);
