// The --dbpath files as a kill -9 can leave them: copies of the data directory taken at each step of a
// journal compaction must each replay to every write committed before the copy (in-process, against the
// storage engine; journal-restart.test.ts does the same through real processes and the driver).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BSON } from 'bson';
import { afterAll, expect, it } from 'vitest';
import type { Doc } from '../src/bson-order.js';
import { Engine } from '../src/engine.js';
import { until } from './helpers/until.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-journal-'));
let dirs = 0;
const freshDir = (): string => path.join(root, `db${++dirs}`);

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const journalFiles = (dir: string): string[] => fs.readdirSync(dir).filter((f) => /^journal(\.\d+)?\.bson$/.test(f));

/** A copy of the data directory as a kill -9 at this moment would leave it. */
function crashCopy(dir: string): string {
  const copy = freshDir();
  fs.cpSync(dir, copy, { recursive: true });
  return copy;
}

/** Documents of t.items by _id, after a restart on `dir`; also checks the unique index came back. */
async function reopen(dir: string): Promise<Map<number, Doc>> {
  const engine = new Engine({ dbPath: dir, journalCompactBytes: Number.MAX_SAFE_INTEGER });
  try {
    const coll = engine.getCollection('t', 'items');
    expect(coll?.indexes.map((i) => i.spec.name)).toEqual(['_id_', 'sku_1']);
    return new Map([...coll!.docs.values()].map((d) => [d._id as number, d]));
  } finally {
    await engine.close();
  }
}

/** Inserts, replaces and deletes through the engine as commands do, mirroring each write in `expected`. */
function writer(engine: Engine, expected: Map<number, Doc>): (count: number) => void {
  const coll = engine.ensureCollection('t', 'items');
  engine.createIndex(coll, { v: 2, key: { sku: 1 }, name: 'sku_1', unique: true });
  engine.commit();
  let next = 0;
  return (count) => {
    for (let i = 0; i < count; i++, next++) {
      const doc = { _id: next, sku: `sku-${next}`, qty: 0, pad: 'x'.repeat(40) };
      engine.insert(coll, doc);
      expected.set(next, doc);
      const earlier = expected.get(next - 2);
      if (next % 3 === 0 && earlier) {
        const updated = { ...earlier, qty: next };
        engine.replace(coll, coll.findRidById(earlier._id)!, updated, undefined);
        expected.set(earlier._id as number, updated);
      }
      if (next % 7 === 0 && expected.has(next - 5)) {
        engine.remove(coll, coll.findRidById(next - 5)!);
        expected.delete(next - 5);
      }
      engine.commit();
    }
  };
}

it('replays the files left at every step of a compaction to every committed write', async () => {
  const dir = freshDir();
  const engine = new Engine({ dbPath: dir, journalCompactBytes: 64 * 1024 });
  const expected = new Map<number, Doc>();
  const write = writer(engine, expected);

  // Synchronous writes until one starts a compaction: a second journal appears in the same turn.
  for (let writes = 0; journalFiles(dir).length < 2; writes++) {
    if (writes > 10_000) throw new Error('no compaction started after 10,000 writes past a 64 KiB bound');
    write(1);
  }
  const started = { dir: crashCopy(dir), expected: new Map(expected) };
  // Writes while the snapshot is being written go to the new journal.
  write(200);
  expect(expected.size).toBeGreaterThan(started.expected.size);
  const during = { dir: crashCopy(dir), expected: new Map(expected) };
  await until(() => engine.journalStats()!.compactions === 1, 'the compaction');
  const done = { dir: crashCopy(dir), expected: new Map(expected) };
  expect(journalFiles(dir)).toHaveLength(1);
  // Killed after the snapshot's rename but before the journal it covers was deleted.
  const beforeDelete = { dir: crashCopy(dir), expected: new Map(expected) };
  const covered = journalFiles(started.dir).find((f) => !journalFiles(dir).includes(f))!;
  fs.copyFileSync(path.join(started.dir, covered), path.join(beforeDelete.dir, covered));
  await engine.close();

  for (const [step, { dir: copy, expected: want }] of Object.entries({ started, during, done, beforeDelete })) {
    expect(await reopen(copy), step).toEqual(want);
    // The restart leaves files a second restart replays the same way.
    expect(await reopen(copy), `${step}, restarted twice`).toEqual(want);
  }
});

it('drops a record cut short by a kill mid-write and appends after the last whole one', async () => {
  const dir = freshDir();
  const expected = new Map<number, Doc>();
  const engine = new Engine({ dbPath: dir });
  writer(engine, expected)(50);
  await engine.close();
  const [journal] = journalFiles(dir);
  const torn = BSON.serialize({ o: 'ins', ns: 't.items', d: { _id: 1000, sku: 'torn', qty: 0 } });
  fs.appendFileSync(path.join(dir, journal), torn.subarray(0, torn.length - 7));

  const restarted = new Engine({ dbPath: dir });
  const coll = restarted.getCollection('t', 'items')!;
  expect(coll.findRidById(1000)).toBeUndefined();
  restarted.insert(coll, { _id: 2000, sku: 'after', qty: 1 });
  restarted.commit();
  await restarted.close();

  const back = await reopen(dir);
  expect(back.get(2000)).toEqual({ _id: 2000, sku: 'after', qty: 1 });
  expect(back.size).toBe(expected.size + 1);
});

it('opens a directory whose snapshot and journal share a generation in the older layout (journal.bson)', async () => {
  const dir = freshDir();
  fs.mkdirSync(dir);
  const records = (gen: number, ...rs: Doc[]): Buffer => Buffer.concat([{ o: 'gen', n: gen }, ...rs].map((r) => BSON.serialize(r)));
  const index = { v: 2, key: { sku: 1 }, name: 'sku_1', unique: true };
  fs.writeFileSync(
    path.join(dir, 'snapshot.bson'),
    records(4, { o: 'cc', ns: 't.items', opts: {} }, { o: 'ci', ns: 't.items', spec: index }, { o: 'ins', ns: 't.items', d: { _id: 1, sku: 'a' } }),
  );
  // Replay is idempotent: an insert of an _id already present replaces the document.
  fs.writeFileSync(
    path.join(dir, 'journal.bson'),
    records(4, { o: 'ins', ns: 't.items', d: { _id: 2, sku: 'x' } }, { o: 'del', ns: 't.items', id: 1 }, { o: 'ins', ns: 't.items', d: { _id: 2, sku: 'b' } }),
  );
  // A journal of an older generation is already in the snapshot: replaying it would bring back _id 1.
  fs.writeFileSync(path.join(dir, 'journal.3.bson'), records(3, { o: 'ins', ns: 't.items', d: { _id: 1, sku: 'a' } }));

  expect(await reopen(dir)).toEqual(new Map([[2, { _id: 2, sku: 'b' }]]));
  expect(journalFiles(dir)).toEqual(['journal.bson']);
});
