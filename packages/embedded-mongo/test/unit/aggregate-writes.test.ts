// $out and $merge against the storage engine, in process: the refusals a newer mongod would not give
// (so aggregate-writes.test.ts cannot assert them through the driver), mongod's codes for the rarer
// spec errors, and the journal replaying what the stages wrote.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Doc } from '../../src/bson-order.js';
import { runCommand } from '../../src/commands.js';
import { Engine } from '../../src/engine.js';
import { Monitor } from '../../src/monitor.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-aggwrites-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const ctx = { db: 't', connectionId: 1, monitor: new Monitor() };
const run = (engine: Engine, cmd: Doc): Doc => runCommand(engine, cmd, ctx) as Doc;
const aggregate = (engine: Engine, pipeline: Doc[], extra: Doc = {}): Doc => run(engine, { aggregate: 'src', pipeline, cursor: {}, ...extra });
const stored = (engine: Engine, db: string, coll: string): Doc[] | undefined => engine.getCollection(db, coll)?.allDocs();

function seeded(): Engine {
  const engine = new Engine();
  run(engine, { insert: 'src', documents: [{ _id: 1, a: 1, v: 'x' }, { _id: 2, a: 2, v: 'y' }] });
  run(engine, { insert: 'dst', documents: [{ _id: 1, a: 1, v: 'old' }] });
  return engine;
}

describe('refusals', () => {
  // Codes and messages from mongod 7.0's document_source_out.cpp and document_source_merge.cpp.
  const rows: Array<{ name: string; pipeline: Doc[]; code: number; message: string }> = [
    { name: '$out with a time-series option (7.0.0 has none)', pipeline: [{ $out: { db: 't', coll: 'ts', timeseries: { timeField: 't' } } }], code: 40415, message: "BSON field '$out.timeseries' is an unknown field." },
    { name: '$out object form without db', pipeline: [{ $out: { coll: 'x' } }], code: 40414, message: "BSON field '$out.db' is missing but a required field" },
    { name: '$out of a number', pipeline: [{ $out: 1 }], code: 16990, message: '$out only supports a string or object argument, but found int' },
    { name: '$out to a system collection', pipeline: [{ $out: 'system.x' }], code: 17385, message: "Can't $out to special collection: system.x" },
    { name: '$out to an internal database', pipeline: [{ $out: { db: 'admin', coll: 'x' } }], code: 31321, message: "Can't $out to internal database: admin" },
    { name: '$out to an invalid name', pipeline: [{ $out: 'a$b' }], code: 73, message: 'Invalid $out target namespace, t.a$b' },
    { name: '$merge to an internal database', pipeline: [{ $merge: { into: { db: 'local', coll: 'x' } } }], code: 31320, message: 'Cannot $merge to internal database: local' },
    { name: '$merge with an unknown option', pipeline: [{ $merge: { into: 'dst', upsert: true } }], code: 40415, message: "BSON field '$merge.upsert' is an unknown field." },
    { name: '$merge with an unknown mode', pipeline: [{ $merge: { into: 'dst', whenMatched: 'update' } }], code: 2, message: "Enumeration value 'update' for field 'whenMatched' is not a valid value." },
    { name: '$merge on a field twice', pipeline: [{ $merge: { into: 'dst', on: ['_id', '_id'] } }], code: 31465, message: "Found a duplicate field '_id'" },
    { name: "$merge with let redefining 'new'", pipeline: [{ $merge: { into: 'dst', let: { new: '$a' }, whenMatched: [{ $set: { b: 1 } }] } }], code: 51273, message: "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'" },
    { name: '$merge in a change stream', pipeline: [{ $changeStream: {} }, { $merge: 'dst' }], code: 20, message: '$merge is not permitted in a $changeStream pipeline' },
    { name: '$merge in a $lookup inside $facet', pipeline: [{ $facet: { a: [{ $lookup: { from: 'dst', pipeline: [{ $merge: 'dst' }], as: 'x' } }] } }], code: 51047, message: "$merge is not allowed within a $lookup's sub-pipeline" },
  ];
  it.each(rows)('$name', ({ pipeline, code, message }) => {
    const engine = seeded();
    expect(aggregate(engine, pipeline)).toMatchObject({ ok: 0, code, errmsg: message });
    expect(stored(engine, 't', 'dst')).toEqual([{ _id: 1, a: 1, v: 'old' }]);
  });
});

describe('write errors name the $merge step that failed', () => {
  // mongod adds context to the write error and keeps its code (document_source_merge.cpp).
  it('an _id change through `on`', () => {
    const engine = seeded();
    run(engine, { createIndexes: 'dst', indexes: [{ key: { a: 1 }, name: 'a_1', unique: true }] });
    const reply = aggregate(engine, [{ $set: { _id: 99 } }, { $merge: { into: 'dst', on: 'a', whenMatched: 'replace' } }]);
    expect(reply).toMatchObject({ ok: 0, code: 66 });
    expect(reply.errmsg).toMatch(/^\$merge failed to update the matching document, did you attempt to modify the _id or the shard key\? :: caused by :: /);
  });

  it('a match under whenMatched: fail', () => {
    const engine = seeded();
    const reply = aggregate(engine, [{ $merge: { into: 'dst', whenMatched: 'fail' } }]);
    expect(reply).toMatchObject({ ok: 0, code: 11000, keyPattern: { _id: 1 } });
    expect(reply.errmsg).toMatch(/^\$merge with whenMatched: fail found an existing document with the same values for the 'on' fields :: caused by :: E11000/);
  });

  it('an array as the `on` value', () => {
    const engine = seeded();
    run(engine, { createIndexes: 'dst', indexes: [{ key: { a: 1 }, name: 'a_1', unique: true }] });
    expect(aggregate(engine, [{ $set: { a: [1] } }, { $merge: { into: 'dst', on: 'a' } }])).toMatchObject({ ok: 0, code: 51185 });
  });
});

it('explain runs no write', () => {
  const engine = seeded();
  expect(run(engine, { aggregate: 'src', pipeline: [{ $out: 'dst' }], explain: true })).toMatchObject({ ok: 1 });
  expect(stored(engine, 't', 'dst')).toEqual([{ _id: 1, a: 1, v: 'old' }]);
});

it('a restart replays what $out and $merge wrote, indexes included', async () => {
  const dir = path.join(root, 'replay');
  const engine = new Engine({ dbPath: dir });
  run(engine, { insert: 'src', documents: [{ _id: 1, sku: 'a' }, { _id: 2, sku: 'b' }] });
  run(engine, { createIndexes: 'out', indexes: [{ key: { sku: 1 }, name: 'sku_1', unique: true }] });
  run(engine, { insert: 'out', documents: [{ _id: 9, sku: 'old' }] });
  run(engine, { insert: 'merged', documents: [{ _id: 1, sku: 'old', keep: true }] });
  expect(aggregate(engine, [{ $out: 'out' }])).toMatchObject({ ok: 1 });
  expect(aggregate(engine, [{ $merge: 'merged' }])).toMatchObject({ ok: 1 });
  await engine.close();

  const reopened = new Engine({ dbPath: dir });
  try {
    expect(stored(reopened, 't', 'out')).toEqual([{ _id: 1, sku: 'a' }, { _id: 2, sku: 'b' }]);
    expect(reopened.getCollection('t', 'out')?.indexes.map((i) => i.spec.name)).toEqual(['_id_', 'sku_1']);
    expect(stored(reopened, 't', 'merged')).toEqual([{ _id: 1, sku: 'a', keep: true }, { _id: 2, sku: 'b' }]);
  } finally {
    await reopened.close();
  }
});
