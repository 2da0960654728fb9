// Hashed indexes (https://www.mongodb.com/docs/manual/core/indexes/index-types/index-hashed/): one
// hashed field, alone or in a compound index (4.4+), serving equality and $in; never unique, and no
// array on any field of the index. Through the driver and mongoose only, so every row holds for a real
// MongoDB (MONGODB_URI), except the restart at the end, which runs its own embedded server.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Double, Long, MongoClient, MongoServerError, type Collection, type Document } from 'mongodb';
import mongoose from 'mongoose';
import { startEmbeddedMongo } from '../src/index.js';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('hashed_index');

async function failure(p: Promise<unknown>): Promise<MongoServerError | undefined> {
  return p.then(
    () => undefined,
    (e: unknown) => {
      if (e instanceof MongoServerError) return e;
      throw e;
    },
  );
}

/** Whether the explained plan scans the named index (mongod nests it differently by version and engine). */
async function usesIndex(c: Collection, filter: Document, name: string): Promise<boolean> {
  const plan = await c.find(filter).explain();
  return JSON.stringify(plan.queryPlanner).includes(`"indexName":"${name}"`);
}

const ids = (docs: Document[]): unknown[] => docs.map((d) => d._id).sort();

describe('a hashed index', () => {
  it('is created, listed with its spec and used for equality and $in', async () => {
    const c = testDb.fresh();
    await c.insertMany([
      { _id: 1, h: 1 },
      { _id: 2, h: new Double(1) },
      { _id: 3, h: Long.fromNumber(1) },
      { _id: 4, h: 1.5 },
      { _id: 5, h: 'x' },
      { _id: 6, h: null },
      { _id: 7 },
      { _id: 8, h: { a: 1 } },
    ] as Document[]);
    expect(await c.createIndex({ h: 'hashed' })).toBe('h_hashed');
    const listed = (await c.listIndexes().toArray()).find((i) => i.name === 'h_hashed');
    expect(listed?.key).toEqual({ h: 'hashed' });
    // 1, 1.0 and NumberLong(1) are one value; 1.5 shares their hash (doubles are truncated) but not their value.
    expect(ids(await c.find({ h: 1 }).toArray())).toEqual([1, 2, 3]);
    expect(ids(await c.find({ h: { $in: ['x', 1.5] } }).toArray())).toEqual([4, 5]);
    expect(ids(await c.find({ h: null }).toArray())).toEqual([6, 7]);
    expect(ids(await c.find({ h: { a: 1 } }).toArray())).toEqual([8]);
    expect(await usesIndex(c, { h: 1 }, 'h_hashed')).toBe(true);
    expect(await usesIndex(c, { h: { $in: ['x', 2] } }, 'h_hashed')).toBe(true);
    // A range cannot use it, but is answered all the same.
    expect(await usesIndex(c, { h: { $gt: 1 } }, 'h_hashed')).toBe(false);
    expect(ids(await c.find({ h: { $gt: 1 } }).toArray())).toEqual([4]);
    expect(ids(await c.find({}).hint({ h: 'hashed' }).toArray())).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('compound with one hashed field serves equality on both', async () => {
    const c = testDb.fresh();
    await c.createIndex({ a: 1, h: 'hashed' });
    await c.insertMany([
      { _id: 1, a: 1, h: 'x' },
      { _id: 2, a: 1, h: 'y' },
      { _id: 3, a: 2, h: 'x' },
    ] as Document[]);
    expect(ids(await c.find({ a: 1, h: 'x' }).toArray())).toEqual([1]);
    expect(ids(await c.find({ a: 1 }).sort({ _id: 1 }).toArray())).toEqual([1, 2]);
    expect(await usesIndex(c, { a: 1, h: 'x' }, 'a_1_h_hashed')).toBe(true);
  });

  it('sparse: leaves out documents without the field, and a query for null still finds them', async () => {
    const c = testDb.fresh();
    await c.createIndex({ h: 'hashed' }, { sparse: true });
    await c.insertMany([{ _id: 1, h: 5 }, { _id: 2 }] as Document[]);
    expect(ids(await c.find({ h: null }).toArray())).toEqual([2]);
    expect(ids(await c.find({}).hint({ h: 'hashed' }).toArray())).toEqual([1]);
  });

  it('under a collation matches strings by it', async () => {
    const c = testDb.fresh();
    const collation = { locale: 'en', strength: 2 };
    await c.createIndex({ h: 'hashed' }, { collation });
    await c.insertMany([{ _id: 1, h: 'abc' }, { _id: 2, h: 'abd' }] as Document[]);
    expect(ids(await c.find({ h: 'ABC' }, { collation }).toArray())).toEqual([1]);
  });

  it("mongoose's schema.index({field: 'hashed'})", async () => {
    const conn = await mongoose.createConnection(testDb.uri, { dbName: testDb.dbName }).asPromise();
    try {
      const schema = new mongoose.Schema({ email: String });
      schema.index({ email: 'hashed' });
      const User = conn.model('HashedUser', schema);
      await User.init();
      await User.create([{ email: 'a@x' }, { email: 'b@x' }]);
      expect((await User.collection.listIndexes().toArray()).map((i) => i.key)).toContainEqual({ email: 'hashed' });
      expect((await User.findOne({ email: 'b@x' }))?.email).toBe('b@x');
    } finally {
      await conn.close();
    }
  });
});

describe('hashed index refusals', () => {
  // mongod's hash access method and key generator (hash_access_method.cpp, expression_params.cpp,
  // expression_keys_private.cpp).
  it('no unique hashed index (16764)', async () => {
    const err = await failure(testDb.fresh().createIndex({ h: 'hashed' }, { unique: true }));
    expect(err?.code).toBe(16764);
    expect(err?.message).toContain('Currently hashed indexes cannot guarantee uniqueness. Use a regular index.');
  });

  it('at most one hashed field (31303)', async () => {
    const err = await failure(testDb.fresh().createIndex({ a: 'hashed', b: 'hashed' }));
    expect(err?.code).toBe(31303);
    expect(err?.message).toContain('A maximum of one index field is allowed to be hashed but found 2');
  });

  it('no array on a field of the index, inserted or updated (16766)', async () => {
    const c = testDb.fresh();
    await c.createIndex({ a: 1, h: 'hashed' });
    await c.insertOne({ _id: 1, a: 1, h: 'x' } as Document);
    for (const doc of [{ _id: 2, h: [1] }, { _id: 3, h: [] }, { _id: 4, a: [1] }]) {
      const err = await failure(c.insertOne(doc as Document));
      expect(err?.code, JSON.stringify(doc)).toBe(16766);
      expect(err?.message).toContain('hashed indexes do not currently support array values');
    }
    const err = await failure(c.updateOne({ _id: 1 } as Document, { $set: { h: ['x'] } }));
    expect(err?.code).toBe(16766);
    expect(await c.findOne({ _id: 1 } as Document)).toEqual({ _id: 1, a: 1, h: 'x' });
    expect(await c.countDocuments()).toBe(1);
  });

  it('is not built over documents already holding an array (16766)', async () => {
    const c = testDb.fresh();
    await c.insertOne({ h: [1, 2] });
    const err = await failure(c.createIndex({ h: 'hashed' }));
    expect(err?.code).toBe(16766);
    expect((await c.listIndexes().toArray()).map((i) => i.name)).toEqual(['_id_']);
  });
});

describe('a hashed index across a restart (--dbpath)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-mongo-hashed-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is back with its spec and still serves equality', async () => {
    const first = await startEmbeddedMongo({ port: 0, dbPath: dir });
    const client = await MongoClient.connect(first.uri);
    await client.db('d').collection('c').createIndex({ h: 'hashed' });
    await client.db('d').collection('c').insertMany([{ _id: 1, h: 'x' }, { _id: 2, h: 'y' }] as Document[]);
    await client.close();
    await first.stop();

    const second = await startEmbeddedMongo({ port: 0, dbPath: dir });
    const again = await MongoClient.connect(second.uri);
    try {
      const c = again.db('d').collection('c');
      expect((await c.listIndexes().toArray()).map((i) => i.key)).toContainEqual({ h: 'hashed' });
      expect(ids(await c.find({ h: 'y' }).toArray())).toEqual([2]);
      expect(await usesIndex(c, { h: 'y' }, 'h_hashed')).toBe(true);
      expect((await failure(c.insertOne({ h: [1] })))?.code).toBe(16766);
    } finally {
      await again.close();
      await second.stop();
    }
  });
});
