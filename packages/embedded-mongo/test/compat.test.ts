// Compatibility suite for the database the project runs on. It talks only through the public driver,
// mongoose and GridFS APIs to `inject('mongoUri')`, so the same assertions hold for the embedded server
// and for a real MongoDB (MONGODB_URI).
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Decimal128, GridFSBucket, Long, MongoClient, MongoServerError, ObjectId } from 'mongodb';
import mongoose from 'mongoose';
import { until } from './helpers/until.js';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('compat');

describe('handshake and commands', () => {
  it('answers hello as a writable primary with a modern wire version', async () => {
    const hello = await testDb.db.admin().command({ hello: 1 });
    expect(hello.isWritablePrimary).toBe(true);
    expect(hello.maxWireVersion).toBeGreaterThanOrEqual(9);
    expect((await testDb.db.command({ ping: 1 })).ok).toBe(1);
    expect(typeof (await testDb.db.admin().command({ buildInfo: 1 })).version).toBe('string');
  });

  it('rejects unknown commands with code 59', async () => {
    await expect(testDb.db.command({ noSuchCommand: 1 })).rejects.toMatchObject({ code: 59 });
  });

  it('reports a missing collection to listIndexes with code 26', async () => {
    await expect(testDb.db.collection('never_created').listIndexes().toArray()).rejects.toMatchObject({ code: 26 });
  });

  it('reports an unknown cursor with code 43', async () => {
    await testDb.db.collection('cursors43').insertMany(Array.from({ length: 5 }, (_, i) => ({ i })));
    await expect(testDb.db.command({ getMore: Long.fromNumber(123456789), collection: 'cursors43' })).rejects.toMatchObject({ code: 43 });
  });

  it('lists, creates and drops collections and databases', async () => {
    await testDb.db.createCollection('made');
    await expect(testDb.db.createCollection('made')).rejects.toMatchObject({ code: 48 });
    const names = (await testDb.db.listCollections().toArray()).map((c) => c.name);
    expect(names).toContain('made');
    const dbs = await testDb.client.db('admin').admin().listDatabases();
    expect(dbs.databases.map((d) => d.name)).toContain(testDb.dbName);
    expect(await testDb.db.collection('made').drop()).toBe(true);
    expect((await testDb.db.listCollections({ name: 'made' }).toArray()).length).toBe(0);
  });
});

describe('CRUD semantics', () => {
  it('batches large result sets through getMore and honours sort/skip/limit', async () => {
    const c = testDb.db.collection('batching');
    await c.insertMany(Array.from({ length: 250 }, (_, i) => ({ i, even: i % 2 === 0 })));
    const all = await c.find({}, { batchSize: 7 }).sort({ i: -1 }).toArray();
    expect(all.map((d) => d.i)).toEqual(Array.from({ length: 250 }, (_, i) => 249 - i));
    const page = await c.find({ even: true }).sort({ i: 1 }).skip(10).limit(5).toArray();
    expect(page.map((d) => d.i)).toEqual([20, 22, 24, 26, 28]);
    expect(await c.countDocuments({ even: false })).toBe(125);
    const cursor = c.find({}, { batchSize: 3 });
    await cursor.next();
    await cursor.close();
  });

  it('applies inclusion and exclusion projections, including mongoose select:false', async () => {
    const c = testDb.db.collection('proj');
    await c.insertOne({ _id: 'p1' as any, name: 'n', secret: 's', nested: { a: 1, b: 2 }, list: [{ x: 1, y: 2 }] });
    expect(await c.findOne({ _id: 'p1' as any }, { projection: { name: 1 } })).toEqual({ _id: 'p1', name: 'n' });
    expect(await c.findOne({ _id: 'p1' as any }, { projection: { secret: 0, 'nested.a': 0, _id: 0 } })).toEqual({ name: 'n', nested: { b: 2 }, list: [{ x: 1, y: 2 }] });
    expect(await c.findOne({ _id: 'p1' as any }, { projection: { 'list.y': 1, _id: 0 } })).toEqual({ list: [{ y: 2 }] });

    const conn = await mongoose.createConnection(testDb.uri, { dbName: testDb.dbName }).asPromise();
    try {
      const User = conn.model('ProjUser', new mongoose.Schema({ email: String, hash: { type: String, select: false } }));
      const u = await User.create({ email: 'a@example.com', hash: 'h' });
      const plain = await User.findById(u._id).lean();
      expect(plain?.email).toBe('a@example.com');
      expect(plain).not.toHaveProperty('hash');
      const withHash = await User.findById(u._id).select('+hash').lean();
      expect(withHash?.hash).toBe('h');
    } finally {
      await conn.close();
    }
  });

  it('slices arrays in projections of find and findOneAndUpdate', async () => {
    const c = testDb.db.collection('slices');
    await c.insertOne({ _id: 's1' as any, name: 'n', n: 0, list: [0, 1, 2, 3, 4], nested: { arr: ['a', 'b', 'c'] } });
    // Alone, $slice keeps every other field.
    expect(await c.findOne({ _id: 's1' as any }, { projection: { list: { $slice: [1, 2] } } })).toEqual({
      _id: 's1',
      name: 'n',
      n: 0,
      list: [1, 2],
      nested: { arr: ['a', 'b', 'c'] },
    });
    expect(await c.findOne({ _id: 's1' as any }, { projection: { list: { $slice: -2 }, 'nested.arr': { $slice: 1 } } })).toMatchObject({
      list: [3, 4],
      nested: { arr: ['a'] },
    });
    // With inclusions, the sliced field is included too.
    expect(await c.findOne({ _id: 's1' as any }, { projection: { name: 1, list: { $slice: [4, 3] } } })).toEqual({ _id: 's1', name: 'n', list: [4] });
    expect(await c.findOne({ _id: 's1' as any }, { projection: { _id: 0, list: { $slice: [-10, 2] } } })).toMatchObject({ list: [0, 1] });
    const after = await c.findOneAndUpdate(
      { _id: 's1' as any, 'list.3': 3 },
      { $inc: { n: 1, 'list.3': 10 } },
      { returnDocument: 'after', projection: { list: { $slice: [3, 1] } } },
    );
    expect(after).toEqual({ _id: 's1', name: 'n', n: 1, list: [13], nested: { arr: ['a', 'b', 'c'] } });
    expect((await c.findOne({ _id: 's1' as any }))?.list).toEqual([0, 1, 2, 13, 4]);
  });

  it('upserts with $setOnInsert only on insert and seeds from the filter', async () => {
    const c = testDb.db.collection('upserts');
    const first = await c.findOneAndUpdate(
      { key: 'k1', tenant: 't' },
      { $setOnInsert: { createdAt: 1 }, $inc: { hits: 1 } },
      { upsert: true, returnDocument: 'after' },
    );
    expect(first).toMatchObject({ key: 'k1', tenant: 't', createdAt: 1, hits: 1 });
    const second = await c.findOneAndUpdate(
      { key: 'k1', tenant: 't' },
      { $setOnInsert: { createdAt: 2 }, $inc: { hits: 1 } },
      { upsert: true, returnDocument: 'after', includeResultMetadata: true },
    );
    expect(second.value).toMatchObject({ createdAt: 1, hits: 2 });
    expect(second.lastErrorObject).toMatchObject({ n: 1, updatedExisting: true });
    const res = await c.updateOne({ key: 'k2' }, { $set: { v: 1 } }, { upsert: true });
    expect(res.upsertedCount).toBe(1);
    expect(res.upsertedId).toBeInstanceOf(ObjectId);
    const missing = await c.findOneAndUpdate({ key: 'nope' }, { $set: { v: 1 } }, { includeResultMetadata: true });
    expect(missing.value).toBeNull();
    expect(missing.lastErrorObject?.n).toBe(0);
  });

  it('supports $push, $pull, positional updates and arrayFilters', async () => {
    const c = testDb.db.collection<{ _id: number; tags: string[]; items: Array<{ k: string; v: number }> }>('arrays');
    await c.insertOne({ _id: 1, tags: ['a'], items: [{ k: 'a', v: 1 }, { k: 'b', v: 2 }] });
    await c.updateOne({ _id: 1 }, { $push: { tags: { $each: ['b', 'c'] } } });
    await c.updateOne({ _id: 1 }, { $pull: { tags: 'a' } });
    await c.updateOne({ _id: 1 }, { $set: { 'items.$[e].v': 20 } }, { arrayFilters: [{ 'e.k': 'b' }] });
    await c.updateOne({ _id: 1, 'items.k': 'a' }, { $inc: { 'items.$.v': 10 } });
    await c.updateOne({ _id: 1 }, { $pull: { items: { v: { $gte: 20 } } } });
    await c.updateOne({ _id: 1 }, { $addToSet: { tags: 'b' } });
    expect(await c.findOne({ _id: 1 })).toEqual({ _id: 1, tags: ['b', 'c'], items: [{ k: 'a', v: 11 }] });
    // Several fields of the filtered elements in one update, next to a top-level change.
    await c.updateOne({ _id: 1 }, { $push: { items: { k: 'c', v: 3 } } });
    const changed = await c.updateOne(
      { _id: 1 },
      { $set: { 'items.$[e].k': 'C', 'items.$[e].done': true }, $inc: { 'items.$[e].v': 100 } },
      { arrayFilters: [{ 'e.k': 'c', 'e.v': { $lt: 10 } }] },
    );
    expect(changed.modifiedCount).toBe(1);
    expect((await c.findOne({ _id: 1 }))?.items).toEqual([{ k: 'a', v: 11 }, { k: 'C', v: 103, done: true }]);
    await expect(c.updateOne({ _id: 1 }, { $set: { 'items.$[x].v': 0 } })).rejects.toMatchObject({ code: 2 });
    await c.updateOne({ _id: 1 }, { $inc: { 'items.$[e].v': 1 } }, { arrayFilters: [{ $or: [{ 'e.k': 'a' }, { 'e.v': { $gt: 100 } }] }] });
    expect((await c.findOne({ _id: 1 }))?.items.map((i) => i.v)).toEqual([12, 104]);
    await c.updateOne({ _id: 1 }, { $pull: { items: { k: 'C' } } });
    // A capped log, as the credit ledger keeps its recent operation ids.
    await c.updateOne({ _id: 1 }, { $push: { tags: { $each: ['d', 'e'], $slice: -3 } } });
    await c.updateOne({ _id: 1 }, { $push: { tags: { $each: ['a'], $position: 0, $sort: 1 } } });
    expect((await c.findOne({ _id: 1 }))?.tags).toEqual(['a', 'c', 'd', 'e']);
  });

  it('updates many, deletes and reports counts', async () => {
    const c = testDb.db.collection('many');
    await c.insertMany(Array.from({ length: 10 }, (_, i) => ({ i, group: i < 4 ? 'x' : 'y' })));
    const upd = await c.updateMany({ group: 'x' }, { $set: { flag: true }, $unset: { i: '' } });
    expect(upd.matchedCount).toBe(4);
    expect(upd.modifiedCount).toBe(4);
    const again = await c.updateMany({ group: 'x' }, { $set: { flag: true } });
    expect(again.modifiedCount).toBe(0);
    expect(await c.countDocuments({ flag: true, i: { $exists: false } })).toBe(4);
    expect((await c.deleteMany({ group: 'y' })).deletedCount).toBe(6);
    expect((await c.deleteOne({ group: 'x' })).deletedCount).toBe(1);
    expect(await c.estimatedDocumentCount()).toBe(3);
    expect(await c.distinct('group')).toEqual(['x']);
  });

  it('rejects an update of _id and an $inc of a string', async () => {
    const c = testDb.db.collection('invalid');
    await c.insertOne({ _id: 'i1' as any, s: 'text' });
    await expect(c.updateOne({ _id: 'i1' as any }, { $set: { _id: 'other' } })).rejects.toMatchObject({ code: 66 });
    await expect(c.updateOne({ _id: 'i1' as any }, { $inc: { s: 1 } })).rejects.toMatchObject({ code: 14 });
  });

  it('compares Long, Decimal128, Date and ObjectId values correctly', async () => {
    const c = testDb.db.collection('types');
    const ids = [new ObjectId('000000000000000000000001'), new ObjectId('000000000000000000000002'), new ObjectId('000000000000000000000003')];
    await c.insertMany([
      { _id: ids[2], n: Long.fromString('9007199254740993'), d: Decimal128.fromString('10.5'), at: new Date('2030-01-01') },
      { _id: ids[0], n: 5, d: Decimal128.fromString('2.25'), at: new Date('2020-01-01') },
      { _id: ids[1], n: 7.5, d: Decimal128.fromString('3'), at: new Date('2025-01-01') },
    ]);
    expect((await c.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id.toHexString())).toEqual(ids.map((i) => i.toHexString()));
    expect((await c.find({ n: { $gt: 6 } }).sort({ n: 1 }).toArray()).map((d) => d._id.toHexString())).toEqual([ids[1], ids[2]].map((i) => i.toHexString()));
    expect(await c.countDocuments({ n: { $gt: Long.fromString('9007199254740992') } })).toBe(1);
    expect(await c.countDocuments({ d: { $gte: Decimal128.fromString('3') } })).toBe(2);
    expect(await c.countDocuments({ at: { $lt: new Date('2026-01-01') } })).toBe(2);
    expect(await c.countDocuments({ _id: { $gt: ids[0] } })).toBe(2);
    expect(await c.countDocuments({ n: { $gt: 'a string' } })).toBe(0);
  });

  it('runs aggregations with computed expressions and accumulators', async () => {
    const c = testDb.db.collection('orders');
    await c.insertMany([
      { account: 'a', credits: 5, kind: 'image' },
      { account: 'a', credits: 3, kind: 'define' },
      { account: 'b', credits: 10, kind: 'image' },
    ]);
    const rows = await c
      .aggregate([
        { $match: { credits: { $gte: 3 } } },
        { $group: { _id: '$account', total: { $sum: '$credits' }, n: { $sum: 1 }, kinds: { $addToSet: '$kind' } } },
        { $project: { total: 1, n: 1, doubled: { $multiply: ['$total', 2] }, many: { $gt: ['$n', 1] } } },
        { $sort: { total: -1 } },
      ])
      .toArray();
    expect(rows).toEqual([
      { _id: 'b', total: 10, n: 1, doubled: 20, many: false },
      { _id: 'a', total: 8, n: 2, doubled: 16, many: true },
    ]);
    const [counted] = await c.aggregate([{ $match: { kind: 'image' } }, { $count: 'images' }]).toArray();
    expect(counted).toEqual({ images: 2 });
  });
});

describe('indexes', () => {
  it('enforces unique and compound unique indexes with 11000 errors shaped like mongod', async () => {
    const c = testDb.db.collection('uniq');
    await c.createIndex({ email: 1 }, { unique: true });
    await c.createIndex({ account: 1, slot: 1 }, { unique: true, name: 'account_slot' });
    await c.insertOne({ email: 'a@x', account: 'acc', slot: 1 });
    const err = await c.insertOne({ email: 'a@x', account: 'acc', slot: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MongoServerError);
    expect(err).toMatchObject({ code: 11000, keyPattern: { email: 1 }, keyValue: { email: 'a@x' } });
    const compound = await c.insertOne({ email: 'b@x', account: 'acc', slot: 1 }).catch((e: unknown) => e);
    expect(compound).toMatchObject({ code: 11000, keyPattern: { account: 1, slot: 1 }, keyValue: { account: 'acc', slot: 1 } });
    await c.insertOne({ email: 'c@x', account: 'acc', slot: 2 });

    const bulk = await c.insertMany([{ email: 'd@x', slot: 4 }, { email: 'a@x', slot: 5 }, { email: 'e@x', slot: 6 }], { ordered: false }).catch((e: unknown) => e as any);
    expect(bulk.code).toBe(11000);
    expect(bulk.writeErrors.length).toBe(1);
    expect(bulk.writeErrors[0].index).toBe(1);
    expect(bulk.result.insertedCount).toBe(2);

    const upd = await c.updateOne({ email: 'c@x' }, { $set: { slot: 1 } }).catch((e: unknown) => e);
    expect(upd).toMatchObject({ code: 11000 });
    const names = (await c.listIndexes().toArray()).map((i) => i.name);
    expect(names).toEqual(expect.arrayContaining(['_id_', 'email_1', 'account_slot']));
    await c.dropIndex('account_slot');
    expect((await c.listIndexes().toArray()).map((i) => i.name)).not.toContain('account_slot');
  });

  it('mongoose unique index reports a duplicate as 11000', async () => {
    const conn = await mongoose.createConnection(testDb.uri, { dbName: testDb.dbName }).asPromise();
    try {
      const Key = conn.model('UniqueKey', new mongoose.Schema({ hash: { type: String, unique: true }, credits: Number }));
      await Key.init();
      const k = await Key.create({ hash: 'h1', credits: 2 });
      await expect(Key.create({ hash: 'h1', credits: 1 })).rejects.toMatchObject({ code: 11000 });
      const after = await Key.findOneAndUpdate({ _id: k._id, credits: { $gte: 1 } }, { $inc: { credits: -1 } }, { returnDocument: 'after' }).lean();
      expect(after?.credits).toBe(1);
    } finally {
      await conn.close();
    }
  });

  it('serves equality and range queries on indexed fields without scanning the collection', async () => {
    const c = testDb.db.collection('indexed');
    await c.createIndex({ hash: 1 });
    await c.createIndex({ at: 1 });
    await c.insertMany(Array.from({ length: 2000 }, (_, i) => ({ hash: `h${i}`, at: new Date(1_000_000 + i * 1000) })));
    const eq = await testDb.db.command({ explain: { find: 'indexed', filter: { hash: 'h1234' } }, verbosity: 'executionStats' });
    expect(eq.executionStats.nReturned).toBe(1);
    expect(eq.executionStats.totalDocsExamined).toBeLessThanOrEqual(1);
    expect(eq.executionStats.totalKeysExamined).toBeLessThanOrEqual(2);
    const range = await testDb.db.command({
      explain: { find: 'indexed', filter: { at: { $gte: new Date(1_000_000 + 100_000), $lt: new Date(1_000_000 + 110_000) } } },
      verbosity: 'executionStats',
    });
    expect(range.executionStats.nReturned).toBe(10);
    expect(range.executionStats.totalDocsExamined).toBeLessThanOrEqual(10);
    // Newest first through an ascending index: walked backwards, stopped by the limit.
    const newest = await c.find({}).sort({ at: -1 }).limit(3).toArray();
    expect(newest.map((d) => d.hash)).toEqual(['h1999', 'h1998', 'h1997']);
    const backward = await testDb.db.command({ explain: { find: 'indexed', filter: {}, sort: { at: -1 }, limit: 3 }, verbosity: 'executionStats' });
    expect(backward.executionStats.totalDocsExamined).toBeLessThanOrEqual(3);
  });
  it('pages by (createdAt, _id) through a compound index without sorting the whole account', async () => {
    const c = testDb.db.collection<{ _id: string; accountId: string; createdAt: Date }>('pages');
    await c.createIndex({ accountId: 1, createdAt: -1, _id: -1 });
    const base = Date.UTC(2030, 0, 1);
    await c.insertMany(
      Array.from({ length: 600 }, (_, i) => ({ _id: `j${String(i).padStart(4, '0')}`, accountId: i % 2 ? 'a' : 'b', createdAt: new Date(base + Math.floor(i / 4) * 1000) })),
    );
    const expected = (await c.find({ accountId: 'a' }).toArray())
      .sort((x, y) => y.createdAt.getTime() - x.createdAt.getTime() || (y._id < x._id ? -1 : y._id > x._id ? 1 : 0))
      .map((d) => d._id);
    const paged: string[] = [];
    let after: { createdAt: Date; id: string } | null = null;
    for (;;) {
      const filter: Record<string, unknown> = { accountId: 'a' };
      if (after) filter.$or = [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, _id: { $lt: after.id } }];
      const page = await c.find(filter).sort({ createdAt: -1, _id: -1 }).limit(7).toArray();
      if (page.length === 0) break;
      paged.push(...page.map((d) => d._id));
      after = { createdAt: page[page.length - 1].createdAt, id: page[page.length - 1]._id };
    }
    expect(paged).toEqual(expected);
    const cursorFilter = { accountId: 'a', $or: [{ createdAt: { $lt: new Date(base + 60_000) } }, { createdAt: new Date(base + 60_000), _id: { $lt: 'j0243' } }] };
    const explained = await testDb.db.command({ explain: { find: 'pages', filter: cursorFilter, sort: { createdAt: -1, _id: -1 }, limit: 7 }, verbosity: 'executionStats' });
    expect(explained.executionStats.nReturned).toBe(7);
    expect(explained.executionStats.totalDocsExamined).toBeLessThanOrEqual(20);
  });
});

describe('concurrency', () => {
  it('1,000 concurrent guarded decrements from 3 clients sell exactly the 300 credits', async () => {
    const c = testDb.db.collection('balances');
    const { insertedId } = await c.insertOne({ credits: 300 });
    const clients = await Promise.all([0, 1, 2].map(() => MongoClient.connect(testDb.uri, { maxPoolSize: 20 })));
    try {
      const results = await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          clients[i % 3]
            .db(testDb.dbName)
            .collection('balances')
            .findOneAndUpdate({ _id: insertedId, credits: { $gte: 1 } }, { $inc: { credits: -1 } }, { returnDocument: 'after' }),
        ),
      );
      const granted = results.filter((r) => r !== null);
      expect(granted.length).toBe(300);
      expect(new Set(granted.map((r) => r!.credits)).size).toBe(300);
      expect((await c.findOne({ _id: insertedId }))?.credits).toBe(0);
    } finally {
      await Promise.all(clients.map((cl) => cl.close()));
    }
  });

  it('refuses multi-document transactions unless the deployment supports them', async () => {
    const hello = await testDb.db.admin().command({ hello: 1 });
    const c = testDb.db.collection('txn');
    await c.insertOne({ before: true });
    const session = testDb.client.startSession();
    try {
      session.startTransaction();
      const attempt = c.insertOne({ inTxn: true }, { session }).then(() => session.commitTransaction());
      if (hello.setName || hello.msg === 'isdbgrid') {
        await attempt;
        expect(await c.countDocuments({ inTxn: true })).toBe(1);
      } else {
        // As a standalone mongod: code 20, IllegalOperation ("Transaction numbers are only allowed on a
        // replica set member or mongos"), which the driver wraps in its retryable-writes advice.
        const err = (await attempt.then(() => null, (e: unknown) => e)) as MongoServerError | null;
        expect(err).toBeInstanceOf(MongoServerError);
        const cause = (err!.code === undefined ? err!.errorResponse.originalError : err) as { code?: number; codeName?: string };
        expect(cause).toMatchObject({ code: 20, codeName: 'IllegalOperation' });
        expect(await c.countDocuments({ inTxn: true })).toBe(0);
      }
    } finally {
      if (session.inTransaction()) await session.abortTransaction().catch(() => undefined);
      await session.endSession();
    }
  });
});

describe('GridFS, change streams and TTL', () => {
  it('round-trips a 2 MB file through GridFS byte for byte', async () => {
    const bucket = new GridFSBucket(testDb.db, { bucketName: 'images' });
    const data = crypto.randomBytes(2 * 1024 * 1024);
    const upload = bucket.openUploadStream('big.bin', { metadata: { kind: 'test' } });
    await new Promise<void>((resolve, reject) => upload.on('finish', () => resolve()).on('error', reject).end(data));
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) =>
      bucket
        .openDownloadStream(upload.id)
        .on('data', (d: Buffer) => chunks.push(d))
        .on('end', () => resolve())
        .on('error', reject),
    );
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
    const [file] = await bucket.find({ _id: upload.id }).toArray();
    expect(file.length).toBe(data.length);
    await bucket.delete(upload.id);
    expect(await bucket.find({ _id: upload.id }).toArray()).toEqual([]);
  });

  it('streams insert, update, replace and delete events and resumes after a token', async () => {
    const c = testDb.db.collection<{ v: number; nested?: { a: number }; list?: number[] }>('watched');
    await testDb.db.createCollection('watched').catch(() => undefined);
    const stream = c.watch([], { fullDocument: 'updateLookup', maxAwaitTimeMS: 200 });
    // The first round trip opens the stream on the server: every later write is in it.
    expect(await stream.tryNext()).toBeNull();
    const events: any[] = [];
    const collecting = (async () => {
      for await (const e of stream) {
        events.push(e);
        if (events.length === 4) break;
      }
    })();
    const { insertedId } = await c.insertOne({ v: 1, nested: { a: 1 }, list: [1] });
    await c.updateOne({ _id: insertedId }, { $set: { v: 2, 'nested.a': 2 }, $push: { list: 2 } });
    await c.replaceOne({ _id: insertedId }, { v: 3 });
    await c.deleteOne({ _id: insertedId });
    await collecting;
    await stream.close();
    expect(events.map((e) => e.operationType)).toEqual(['insert', 'update', 'replace', 'delete']);
    // The insert event keeps the document as inserted: the later update changed none of its parts.
    expect(events[0].fullDocument).toEqual({ _id: insertedId, v: 1, nested: { a: 1 }, list: [1] });
    expect(events[1].updateDescription.updatedFields).toMatchObject({ v: 2, 'nested.a': 2 });
    expect(events[2].fullDocument).toMatchObject({ v: 3 });
    expect(events[3].documentKey).toEqual({ _id: insertedId });

    const resumed = c.watch([], { resumeAfter: events[1]._id, maxAwaitTimeMS: 200 });
    const next = await resumed.next();
    await resumed.close();
    expect(next.operationType).toBe('replace');
  });

  it('reports a pipeline update as an update event with the fields it changed (as MongoDB 5.0+ does)', async () => {
    const c = testDb.db.collection<{ v: number; w?: number; gone?: number; same: number }>('watched_pipeline');
    await testDb.db.createCollection('watched_pipeline').catch(() => undefined);
    const { insertedId } = await c.insertOne({ v: 1, gone: 1, same: 5 });
    const stream = c.watch([], { maxAwaitTimeMS: 200 });
    expect(await stream.tryNext()).toBeNull();
    await c.updateOne({ _id: insertedId }, [{ $set: { v: { $add: ['$v', 1] }, w: 7, same: 5 } }, { $unset: 'gone' }]);
    const event: any = await stream.next();
    await stream.close();
    expect(event.operationType).toBe('update');
    expect(event.updateDescription.updatedFields).toEqual({ v: 2, w: 7 });
    expect(event.updateDescription.removedFields).toEqual(['gone']);
  });

  it('delivers a filtered insert event to a watch opened before the write', async () => {
    const c = testDb.db.collection('watched_inserts');
    await testDb.db.createCollection('watched_inserts').catch(() => undefined);
    const stream = c.watch([{ $match: { operationType: 'insert' } }], { maxAwaitTimeMS: 200 });
    expect(await stream.tryNext()).toBeNull();
    await c.insertOne({ hello: 'world' });
    const event = await stream.next();
    await stream.close();
    expect(event.operationType).toBe('insert');
    expect((event as any).fullDocument.hello).toBe('world');
  });

  // A real mongod may take its whole 60 s TTL period: the deadline and the test's timeout allow for it.
  it('removes an expired document through a TTL index', { timeout: 120_000 }, async () => {
    // A real mongod checks TTL indexes every 60 s unless told otherwise.
    await testDb.db.admin().command({ setParameter: 1, ttlMonitorSleepSecs: 1 }).catch(() => undefined);
    const c = testDb.db.collection('ttl');
    await c.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 });
    await c.insertMany([{ expiresAt: new Date(Date.now() - 1000) }, { expiresAt: new Date(Date.now() + 3_600_000) }]);
    await until(async () => (await c.countDocuments()) === 1, 'the TTL monitor', { timeoutMs: 90_000, intervalMs: 250 });
    expect(await c.countDocuments()).toBe(1);
  });
});
