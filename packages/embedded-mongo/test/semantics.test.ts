// Answers that used to be silently wrong, one table row per case, each with the result MongoDB gives
// (from its documentation). Like compat.test.ts it talks only through the driver to `inject('mongoUri')`,
// so every row holds for a real MongoDB too (MONGODB_URI).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Binary, Decimal128, Double, Int32, Long, MongoClient, MongoServerError, ObjectId, type Db, type Document } from 'mongodb';

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

describe('numbers keep their BSON type', () => {
  // https://www.mongodb.com/docs/manual/reference/bson-types/ and .../operator/update/inc/: a value is
  // stored with the type it was sent with; $inc and $mul give the wider type of field and operand
  // (int < long < double < decimal), and an int result that overflows becomes a long.
  const read = { promoteValues: false } as const;
  const stored: Array<{ name: string; value: unknown; back: unknown }> = [
    { name: 'Long(37) stays a Long', value: Long.fromNumber(37), back: Long.fromNumber(37) },
    { name: 'Double(5.0) stays a Double', value: new Double(5), back: new Double(5) },
    { name: 'Int32(5) stays an Int32', value: 5, back: new Int32(5) },
    { name: 'a fractional Double', value: 2.5, back: new Double(2.5) },
    { name: 'Decimal128 stays a Decimal128', value: Decimal128.fromString('1.5'), back: Decimal128.fromString('1.5') },
  ];
  it.each(stored)('$name', async ({ value, back }) => {
    const c = fresh();
    await c.insertOne({ _id: 1 as never, v: value });
    expect((await c.findOne({ _id: 1 as never }, read))?.v).toEqual(back);
  });

  const updates: Array<{ name: string; field: unknown; update: Document; back: unknown }> = [
    { name: '$inc of an Int32 by a Long gives a Long', field: 1, update: { $inc: { v: Long.fromNumber(2) } }, back: Long.fromNumber(3) },
    { name: '$inc of a Long by an Int32 stays a Long', field: Long.fromNumber(40), update: { $inc: { v: 2 } }, back: Long.fromNumber(42) },
    { name: '$inc of a Double by an Int32 stays a Double', field: new Double(5), update: { $inc: { v: 1 } }, back: new Double(6) },
    { name: '$inc of an Int32 by a Double gives a Double', field: 5, update: { $inc: { v: 0.5 } }, back: new Double(5.5) },
    { name: '$inc past the Int32 range gives a Long', field: 2147483647, update: { $inc: { v: 1 } }, back: Long.fromNumber(2147483648) },
    { name: '$inc of a missing field by a Long sets a Long', field: undefined, update: { $inc: { v: Long.fromNumber(7) } }, back: Long.fromNumber(7) },
    { name: '$mul of an Int32 by a Long gives a Long', field: 3, update: { $mul: { v: Long.fromNumber(2) } }, back: Long.fromNumber(6) },
    { name: '$mul of a missing field by a Double sets Double 0', field: undefined, update: { $mul: { v: new Double(2) } }, back: new Double(0) },
  ];
  it.each(updates)('$name', async ({ field, update, back }) => {
    const c = fresh();
    await c.insertOne(field === undefined ? { _id: 1 as never } : { _id: 1 as never, v: field });
    await c.updateOne({ _id: 1 as never }, update);
    expect((await c.findOne({ _id: 1 as never }, read))?.v).toEqual(back);
  });
});

describe('$type', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/query/type/: each alias matches only its
  // BSON type, 'number' matches the four numeric types, and an array field matches when an element does.
  const docs = [
    { _id: 'int', v: 1 },
    { _id: 'long', v: Long.fromNumber(1) },
    { _id: 'double', v: 1.5 },
    { _id: 'integral double', v: new Double(2) },
    { _id: 'decimal', v: Decimal128.fromString('1') },
    { _id: 'objectId', v: new ObjectId('64b7f0c2a1b2c3d4e5f60718') },
    { _id: 'binData', v: new Binary(Buffer.from('x')) },
    { _id: 'string', v: 's' },
    { _id: 'array of strings', v: ['s'] },
    { _id: 'null', v: null },
    { _id: 'missing' },
  ];
  const rows: Array<{ type: unknown; ids: string[] }> = [
    { type: 'objectId', ids: ['objectId'] },
    { type: 'binData', ids: ['binData'] },
    { type: 'long', ids: ['long'] },
    { type: 'decimal', ids: ['decimal'] },
    { type: 'double', ids: ['double', 'integral double'] },
    { type: 'int', ids: ['int'] },
    { type: 'number', ids: ['decimal', 'double', 'int', 'integral double', 'long'] },
    { type: 18, ids: ['long'] },
    { type: 'string', ids: ['array of strings', 'string'] },
    { type: 'array', ids: ['array of strings'] },
    { type: 'null', ids: ['null'] },
    { type: ['long', 'objectId'], ids: ['long', 'objectId'] },
  ];
  it.each(rows)('{$type: $type}', async ({ type, ids }) => {
    const c = fresh();
    await c.insertMany(docs as Document[]);
    const found = await c.find({ v: { $type: type } } as Document).sort({ _id: 1 }).toArray();
    expect(found.map((d) => d._id)).toEqual(ids);
    // The same rows when another condition of the filter needs the full query language.
    const withRegex = await c.find({ v: { $type: type }, _id: { $regex: /./ } } as Document).sort({ _id: 1 }).toArray();
    expect(withRegex.map((d) => d._id)).toEqual(ids);
  });
});

describe('requests mongod refuses', () => {
  // Each row: what mongod answers (code, and its message's start), where the embedded server used to
  // succeed silently. Sources: .../reference/operator/query/ (unknown operators are BadValue),
  // .../reference/limits/#mongodb-limit-BSON-Document-Size, .../reference/method/db.createCollection/.
  // Two of these make a document just over 16 MiB, in a command the driver still sends (it refuses one over 17 MiB).
  const big = 'x'.repeat(8 * 1024 * 1024);
  const rows: Array<{ name: string; run: (c: ReturnType<typeof fresh>) => Promise<unknown>; code: number; message: string | RegExp }> = [
    { name: 'an unknown operator on an empty collection', run: (c) => c.find({ x: { $bogus: 1 } }).toArray(), code: 2, message: 'unknown operator: $bogus' },
    { name: 'an unknown operator in count', run: (c) => c.countDocuments({ x: { $bogus: 1 } }), code: 2, message: 'unknown operator: $bogus' },
    { name: 'an unknown operator beside a known one', run: (c) => c.deleteMany({ x: { $gt: 1, $bogus: 1 } }), code: 2, message: 'unknown operator: $bogus' },
    { name: 'an unknown top-level operator', run: (c) => c.find({ $bogus: [{ x: 1 }] }).toArray(), code: 2, message: 'unknown top level operator: $bogus' },
    {
      name: 'an update that grows a document past 16 MB',
      run: async (c) => {
        await c.insertOne({ _id: 1 as never, a: big });
        return c.updateOne({ _id: 1 as never }, { $set: { b: big } });
      },
      code: 17419,
      message: 'Resulting document after update is larger than 16777216',
    },
    {
      name: 'an upsert that creates a document past 16 MB',
      run: (c) => c.findOneAndUpdate({ _id: 2 as never }, { $set: { a: big, b: big } }, { upsert: true }),
      code: 17419,
      message: 'Resulting document after update is larger than 16777216',
    },
    {
      name: "$set of a field inside an array ('comments.body')",
      run: async (c) => {
        await c.insertOne({ _id: 1 as never, comments: [{ body: 'first' }] });
        return c.updateOne({ _id: 1 as never }, { $set: { 'comments.body': 'second' } });
      },
      code: 28,
      message: "Cannot create field 'body' in element {comments: ",
    },
    { name: 'create with capped and no size', run: (c) => c.db.createCollection(`${c.collectionName}_capped`, { capped: true }), code: 72, message: "the 'size' field is required when 'capped' is true" },
  ];
  it.each(rows)('$name', async ({ run, code, message }) => {
    const err = await run(fresh()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(code);
    expect((err as MongoServerError).message).toContain(message);
  });

  it('a document over 16 MB sent in an insert command is BSONObjectTooLarge', async () => {
    // The driver's insertOne refuses such a document before sending it; a raw insert command reaches the server.
    const c = fresh();
    const err = await db.command({ insert: c.collectionName, documents: [{ _id: 1, a: big, b: big }] }).then(
      (r) => r.writeErrors?.[0],
      (e: unknown) => e,
    );
    expect(err?.code).toBe(10334);
    expect(await c.countDocuments()).toBe(0);
  });
});

describe('the positional $ operator', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/update/positional/: `$` stands for the first
  // element the query matched in that array, and one update may set several fields of that element.
  const children = [
    { _id: 'a', name: 'Ann', updatedAt: 1 },
    { _id: 'b', name: 'Bob', updatedAt: 1 },
  ];
  const rows: Array<{ name: string; filter: Document; update: Document; after: unknown[] }> = [
    {
      name: "two fields of the matched element (mongoose's child timestamps)",
      filter: { 'children._id': 'b' },
      update: { $set: { 'children.$.name': 'Bea', 'children.$.updatedAt': 2 } },
      after: [children[0], { _id: 'b', name: 'Bea', updatedAt: 2 }],
    },
    {
      name: 'two operators on the matched element',
      filter: { 'children.name': 'Ann' },
      update: { $set: { 'children.$.name': 'Ada' }, $inc: { 'children.$.updatedAt': 5 } },
      after: [{ _id: 'a', name: 'Ada', updatedAt: 6 }, children[1]],
    },
    {
      name: 'an $elemMatch query',
      filter: { children: { $elemMatch: { _id: 'b', name: 'Bob' } } },
      update: { $set: { 'children.$.name': 'Bo' } },
      after: [children[0], { _id: 'b', name: 'Bo', updatedAt: 1 }],
    },
    {
      name: 'a condition inside $and',
      filter: { $and: [{ 'children.updatedAt': 1 }, { 'children._id': 'b' }] },
      update: { $set: { 'children.$.updatedAt': 3 } },
      // The first element matching the conditions on the array: both name 'children', so 'b'.
      after: [children[0], { _id: 'b', name: 'Bob', updatedAt: 3 }],
    },
  ];
  it.each(rows)('$name', async ({ filter, update, after }) => {
    const c = fresh();
    await c.insertOne({ _id: 1 as never, children });
    const res = await c.updateOne({ _id: 1 as never, ...filter }, update);
    expect(res.modifiedCount).toBe(1);
    expect((await c.findOne({ _id: 1 as never }))?.children).toEqual(after);
  });

  it('without a query on the array: BadValue, as mongod answers', async () => {
    const c = fresh();
    await c.insertOne({ _id: 1 as never, children });
    const err = await c.updateOne({ _id: 1 as never }, { $set: { 'children.$.name': 'x' } }).catch((e: unknown) => e);
    expect((err as MongoServerError).code).toBe(2);
    expect((err as MongoServerError).message).toContain('The positional operator did not find the match needed from the query.');
  });
});

describe('change streams', () => {
  // https://www.mongodb.com/docs/manual/changeStreams/: once the aggregate that opens a stream has been
  // answered, the stream sees every later write. The write follows the answer at once, many times over.
  // (A write sent before the aggregate arrives is not seen, on mongod either: mongoose's watch() then
  // create() opens the stream on a new pooled connection, so the insert usually arrives first.)
  it('a stream sees every write made right after its aggregate was answered', async () => {
    const c = fresh();
    for (let round = 0; round < 25; round++) {
      // A short maxAwaitTimeMS: tryNext's empty getMore returns at once instead of after mongod's 1 s.
      const options = { maxAwaitTimeMS: 10 };
      const stream = round % 2 === 0 ? c.watch([], options) : db.watch([{ $match: { 'ns.coll': c.collectionName } }], options);
      try {
        expect(await stream.tryNext()).toBeNull(); // sends the aggregate and waits for its answer
        await c.insertOne({ _id: round as never });
        await c.updateOne({ _id: round as never }, { $set: { seen: true } });
        const first = await stream.next();
        const second = await stream.next();
        expect(first).toMatchObject({ operationType: 'insert', documentKey: { _id: round } });
        expect(second).toMatchObject({ operationType: 'update', documentKey: { _id: round } });
      } finally {
        await stream.close();
      }
    }
  });
});
