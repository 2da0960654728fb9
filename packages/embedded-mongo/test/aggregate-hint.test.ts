// An aggregate's `hint` runs its collection scan on the hinted index, as find().hint() does
// (https://www.mongodb.com/docs/manual/reference/command/aggregate/: "hint"), so without a $sort the
// documents come in that index's order. Through the driver and mongoose only: every row holds for a
// real MongoDB too (MONGODB_URI).
import { describe, expect, it } from 'vitest';
import { MongoServerError, type Document } from 'mongodb';
import mongoose from 'mongoose';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('aggregate_hint');

// Inserted in this order: insertion order is c, a, b; by a ascending b, c, a.
const docs = [
  { _id: 'c', a: 2, k: 1 },
  { _id: 'a', a: 3, k: 1 },
  { _id: 'b', a: 1, k: 1 },
];

async function seeded() {
  const c = testDb.fresh();
  await c.createIndex({ a: 1 });
  await c.createIndex({ a: -1 }, { name: 'a_desc' });
  for (const d of docs) await c.insertOne(d as Document);
  return c;
}

describe('aggregate with hint', () => {
  const rows: Array<{ name: string; pipeline: Document[]; hint: Document | string; ids: string[] }> = [
    { name: 'a leading $match on {a: 1} by key', pipeline: [{ $match: { k: 1 } }], hint: { a: 1 }, ids: ['b', 'c', 'a'] },
    { name: 'a leading $match on {a: -1} by name', pipeline: [{ $match: { k: 1 } }], hint: 'a_desc', ids: ['a', 'c', 'b'] },
    { name: 'no $match, a $project', pipeline: [{ $project: { a: 1 } }], hint: { a: 1 }, ids: ['b', 'c', 'a'] },
    { name: 'an empty pipeline', pipeline: [], hint: { a: -1 }, ids: ['a', 'c', 'b'] },
    { name: 'a $match then $limit', pipeline: [{ $match: {} }, { $limit: 2 }], hint: { a: 1 }, ids: ['b', 'c'] },
    { name: 'a $match then $skip', pipeline: [{ $match: {} }, { $skip: 1 }], hint: { a: 1 }, ids: ['c', 'a'] },
    { name: '$natural: -1', pipeline: [{ $match: {} }], hint: { $natural: -1 }, ids: ['b', 'a', 'c'] },
    { name: 'a $sort after the hint still sorts', pipeline: [{ $match: {} }, { $sort: { _id: 1 } }], hint: { a: 1 }, ids: ['a', 'b', 'c'] },
  ];
  it.each(rows)('$name', async ({ pipeline, hint, ids }) => {
    const c = await seeded();
    expect((await c.aggregate(pipeline, { hint }).toArray()).map((d) => d._id)).toEqual(ids);
  });

  it('a hint naming no index fails as find().hint() does (BadValue)', async () => {
    const c = await seeded();
    const err = await c
      .aggregate([{ $match: {} }], { hint: { nope: 1 } })
      .toArray()
      .then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(2);
    expect((err as MongoServerError).message).toContain('hint provided does not correspond to an existing index');
  });

  it("mongoose's Aggregate.hint()", async () => {
    const conn = await mongoose.createConnection(testDb.uri, { dbName: testDb.dbName }).asPromise();
    try {
      const Row = conn.model('HintRow', new mongoose.Schema({ _id: String, a: Number, k: Number }, { autoIndex: false }));
      await Row.collection.createIndex({ a: 1 });
      for (const d of docs) await Row.collection.insertOne(d as Document);
      const got = await Row.aggregate([{ $match: { k: 1 } }]).hint({ a: 1 });
      expect(got.map((d: { _id: string }) => d._id)).toEqual(['b', 'c', 'a']);
    } finally {
      await conn.close();
    }
  });
});
