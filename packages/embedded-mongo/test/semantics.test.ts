// Answers that used to be silently wrong, one table row per case, each with the result MongoDB gives
// (from its documentation). Like compat.test.ts it talks only through the driver to `inject('mongoUri')`,
// so every row holds for a real MongoDB too (MONGODB_URI).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoClient, type Db, type Document } from 'mongodb';

const uri = inject('mongoUri');
const dbName = `semantics_${process.pid}_${Date.now()}`;
let client: MongoClient;
let db: Db;
let collections = 0;
const fresh = () => db.collection(`c${++collections}`);

beforeAll(async () => {
  client = await MongoClient.connect(uri);
  db = client.db(dbName);
});

afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

describe('$pull with a condition', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/update/pull/: a condition that is a query
  // ($or and $and included) is applied to each element document; one led by a comparison operator is
  // applied to each element's value.
  const rows: Array<{ name: string; array: unknown[]; pull: Document; left: unknown[] }> = [
    { name: '$or over element fields', array: [{ a: 1 }, { a: 2 }, { b: 3 }], pull: { $or: [{ a: 1 }, { b: 3 }] }, left: [{ a: 2 }] },
    { name: '$and over element fields', array: [{ a: 1, b: 1 }, { a: 1, b: 2 }, { a: 2, b: 1 }], pull: { $and: [{ a: 1 }, { b: 2 }] }, left: [{ a: 1, b: 1 }, { a: 2, b: 1 }] },
    {
      name: "mongoose's DocumentArray.pull() of subdocuments without _id",
      array: [{ name: 'x', n: 1 }, { name: 'y', n: 2 }, { name: 'z', n: 3 }],
      pull: { $or: [{ name: 'x', n: 1 }, { name: 'z', n: 3 }] },
      left: [{ name: 'y', n: 2 }],
    },
    { name: '$nor over element fields', array: [{ a: 1 }, { a: 2 }], pull: { $nor: [{ a: 1 }] }, left: [{ a: 1 }] },
    { name: '$or leaves scalar elements alone', array: [1, { a: 1 }, 'a'], pull: { $or: [{ a: 1 }] }, left: [1, 'a'] },
    { name: 'a comparison on each value (the documentation example)', array: [3, 5, 6, 7, 7, 8], pull: { $gte: 6 }, left: [3, 5] },
    { name: 'field conditions on element documents', array: [{ item: 'A', score: 5 }, { item: 'B', score: 8 }], pull: { score: 8, item: 'B' }, left: [{ item: 'A', score: 5 }] },
  ];
  it.each(rows)('$name', async ({ array, pull, left }) => {
    const c = fresh();
    await c.insertOne({ _id: 1 as never, arr: array });
    const res = await c.updateOne({ _id: 1 as never }, { $pull: { arr: pull } } as Document);
    expect(res.modifiedCount).toBe(1);
    expect((await c.findOne({ _id: 1 as never }))?.arr).toEqual(left);
  });
});

