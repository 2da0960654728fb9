// Answers that used to be silently wrong, one table row per case, each with the result MongoDB gives
// (from its documentation). Like compat.test.ts it talks only through the driver to `inject('mongoUri')`,
// so every row holds for a real MongoDB too (MONGODB_URI).
import { describe, expect, it } from 'vitest';
import { Binary, DBRef, Decimal128, Double, Int32, Long, MongoServerError, ObjectId, type Document } from 'mongodb';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('semantics');

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
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, arr: array });
    const res = await c.updateOne({ _id: 1 as never }, { $pull: { arr: pull } } as Document);
    expect(res.modifiedCount).toBe(1);
    expect((await c.findOne({ _id: 1 as never }))?.arr).toEqual(left);
  });

  // mongod refuses $pull on a field that holds no array (BadValue "Cannot apply $pull to a non-array
  // value") and leaves the document alone; on a missing field it is a no-op.
  const fields: Array<{ name: string; value: unknown; refused: boolean }> = [
    { name: 'a string field is refused', value: 'abc', refused: true },
    { name: 'a number field is refused', value: 5, refused: true },
    { name: 'a null field is refused', value: null, refused: true },
    { name: 'an embedded document is refused', value: { a: 1 }, refused: true },
    { name: 'a missing field is a no-op', value: undefined, refused: false },
  ];
  it.each(fields)('on a field that is not an array: $name', async ({ value, refused }) => {
    const c = testDb.fresh();
    await c.insertOne(value === undefined ? { _id: 1 as never } : { _id: 1 as never, arr: value });
    const update = c.updateOne({ _id: 1 as never }, { $pull: { arr: 'a' } } as Document);
    if (refused) {
      await expect(update).rejects.toMatchObject({ code: 2, message: 'Cannot apply $pull to a non-array value' });
    } else {
      expect((await update).modifiedCount).toBe(0);
    }
    expect((await c.findOne({ _id: 1 as never }))?.arr).toEqual(value);
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
    const c = testDb.fresh();
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
    const c = testDb.fresh();
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
    const c = testDb.fresh();
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
  // .../reference/limits/#mongodb-limit-BSON-Document-Size, .../reference/method/testDb.db.createCollection/.
  // Two of these make a document just over 16 MiB, in a command the driver still sends (it refuses one over 17 MiB).
  const big = 'x'.repeat(8 * 1024 * 1024);
  const rows: Array<{ name: string; run: (c: ReturnType<typeof testDb.fresh>) => Promise<unknown>; code: number; message: string | RegExp }> = [
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
    const err = await run(testDb.fresh()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(code);
    expect((err as MongoServerError).message).toContain(message);
  });

  it('a document over 16 MB sent in an insert command is BSONObjectTooLarge', async () => {
    // The driver's insertOne refuses such a document before sending it; a raw insert command reaches the server.
    const c = testDb.fresh();
    const err = await testDb.db.command({ insert: c.collectionName, documents: [{ _id: 1, a: big, b: big }] }).then(
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
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, children });
    const res = await c.updateOne({ _id: 1 as never, ...filter }, update);
    expect(res.modifiedCount).toBe(1);
    expect((await c.findOne({ _id: 1 as never }))?.children).toEqual(after);
  });

  it('without a query on the array: BadValue, as mongod answers', async () => {
    const c = testDb.fresh();
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
    const c = testDb.fresh();
    for (let round = 0; round < 25; round++) {
      // A short maxAwaitTimeMS: tryNext's empty getMore returns at once instead of after mongod's 1 s.
      const options = { maxAwaitTimeMS: 10 };
      const stream = round % 2 === 0 ? c.watch([], options) : testDb.db.watch([{ $match: { 'ns.coll': c.collectionName } }], options);
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

/** The error a request fails with (undefined when it succeeds). */
async function failure(request: Promise<unknown>): Promise<MongoServerError | undefined> {
  return request.then(
    () => undefined,
    (e: unknown) => {
      expect(e).toBeInstanceOf(MongoServerError);
      return e as MongoServerError;
    },
  );
}

describe('what needs an index this server never builds', () => {
  // mongod's own answers on a collection without such an index: .../reference/operator/query/near/
  // ($near needs a geospatial index), .../reference/operator/query/text/ ($text needs a text index),
  // .../reference/operator/aggregation/geoNear/, and createIndexes' key pattern rules
  // (.../reference/command/createIndexes/, geoHaystack removed in 5.0). Unknown stages: .../aggregation-pipeline/.
  const rows: Array<{ name: string; run: (c: ReturnType<typeof testDb.fresh>) => Promise<unknown>; code: number; message: string }> = [
    { name: '$near', run: (c) => c.find({ loc: { $near: [0, 0] } }).toArray(), code: 291, message: 'unable to find index for $geoNear query' },
    {
      name: '$nearSphere with $maxDistance',
      run: (c) => c.find({ loc: { $nearSphere: { $geometry: { type: 'Point', coordinates: [0, 0] }, $maxDistance: 10 } } }).toArray(),
      code: 291,
      message: 'unable to find index for $geoNear query',
    },
    { name: '$text', run: (c) => c.find({ $text: { $search: 'coffee' } }).toArray(), code: 27, message: 'text index required for $text query' },
    { name: '$geoNear', run: (c) => c.aggregate([{ $geoNear: { near: [0, 0], distanceField: 'd' } }]).toArray(), code: 27, message: '$geoNear requires a 2d or 2dsphere index, but none were found' },
    { name: 'an unknown stage', run: (c) => c.aggregate([{ $bogus: {} }]).toArray(), code: 40324, message: "Unrecognized pipeline stage name: '$bogus'" },
    { name: 'a geoHaystack index', run: (c) => c.createIndex({ loc: 'geoHaystack', a: 1 } as Document), code: 67, message: 'GeoHaystack indexes cannot be created in version 5.0 and above' },
    { name: 'an unknown index type', run: (c) => c.createIndex({ a: 'bogus' } as Document), code: 67, message: "Unknown index plugin 'bogus'" },
    { name: 'an index direction of 0', run: (c) => c.createIndex({ a: 0 } as Document), code: 67, message: 'Values in the index key pattern cannot be 0.' },
    { name: 'a hint naming no index', run: (c) => c.find({}).hint({ nope: 1 }).toArray(), code: 2, message: 'hint provided does not correspond to an existing index' },
    { name: 'a bit test of a string', run: (c) => c.find({ a: { $bitsAllSet: 'x' } }).toArray(), code: 2, message: 'takes an Array, a number, or a BinData' },
  ];
  it.each(rows)('$name', async ({ run, code, message }) => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, loc: [0, 0], body: 'coffee' });
    const err = await failure(run(c));
    expect(err?.code).toBe(code);
    expect(err?.message).toContain(message);
  });
});

describe('$all on a field that is not an array', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/query/all/: $all is the $and of equalities,
  // so {tags: {$all: ['a']}} also matches a tags field equal to 'a'; an empty list matches nothing.
  const docs = [
    { _id: 'string', tags: 'a' },
    { _id: 'array', tags: ['a', 'b'] },
    { _id: 'other', tags: 'c' },
  ];
  const rows: Array<{ all: unknown[]; ids: string[] }> = [
    { all: ['a'], ids: ['array', 'string'] },
    { all: ['a', 'b'], ids: ['array'] },
    { all: ['b', 'a'], ids: ['array'] },
    { all: [], ids: [] },
  ];
  it.each(rows)('{$all: $all}', async ({ all, ids }) => {
    const c = testDb.fresh();
    await c.insertMany(docs as Document[]);
    const found = await c.find({ tags: { $all: all } }).sort({ _id: 1 }).toArray();
    expect(found.map((d) => d._id)).toEqual(ids);
  });
});

describe('BinData comparisons and order', () => {
  // https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/#bindata: BinData compares
  // by length, then subtype, then byte by byte.
  const docs = [
    { _id: 'one byte ff', b: new Binary(Buffer.from([0xff]), 0) },
    { _id: 'two bytes 00', b: new Binary(Buffer.from([0, 0]), 0) },
    { _id: 'one byte subtype 5', b: new Binary(Buffer.from([1]), 5) },
    { _id: 'one byte 01', b: new Binary(Buffer.from([1]), 0) },
  ];
  const rows: Array<{ name: string; filter: Document; ids: string[] }> = [
    { name: '$gt a one-byte value: longer ones and higher subtypes', filter: { b: { $gt: new Binary(Buffer.from([0xff]), 0) } }, ids: ['one byte subtype 5', 'two bytes 00'] },
    { name: '$lt a two-byte value: every one-byte value', filter: { b: { $lt: new Binary(Buffer.from([0, 0]), 0) } }, ids: ['one byte 01', 'one byte ff', 'one byte subtype 5'] },
    { name: '$lte a one-byte value of subtype 0: by bytes', filter: { b: { $lte: new Binary(Buffer.from([0x10]), 0) } }, ids: ['one byte 01'] },
  ];
  it.each(rows)('$name', async ({ filter, ids }) => {
    const c = testDb.fresh();
    await c.insertMany(docs as Document[]);
    expect((await c.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual(ids);
  });

  it('sorts by length, then subtype, then bytes', async () => {
    const c = testDb.fresh();
    await c.insertMany(docs as Document[]);
    expect((await c.find().sort({ b: 1 }).toArray()).map((d) => d._id)).toEqual(['one byte 01', 'one byte ff', 'one byte subtype 5', 'two bytes 00']);
  });
});

describe('bit tests on numbers and BinData', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/query/bitsAllSet/ (and bitsAnySet,
  // bitsAllClear, bitsAnyClear), with the documentation's collection: 54 = 0b00110110,
  // 20 = 0b00010100, BinData(0, "Zg==") = 0b01100110.
  const docs = [
    { _id: 1, a: 54 },
    { _id: 2, a: 20 },
    { _id: 3, a: new Double(20) },
    { _id: 4, a: new Binary(Buffer.from('Zg==', 'base64'), 0) },
  ];
  const rows: Array<{ filter: Document; ids: number[] }> = [
    { filter: { a: { $bitsAllSet: [1, 5] } }, ids: [1, 4] },
    { filter: { a: { $bitsAllSet: 50 } }, ids: [1] },
    { filter: { a: { $bitsAllSet: new Binary(Buffer.from('MC==', 'base64')) } }, ids: [1] },
    { filter: { a: { $bitsAnySet: [1, 5] } }, ids: [1, 4] },
    { filter: { a: { $bitsAnySet: new Binary(Buffer.from('MC==', 'base64')) } }, ids: [1, 2, 3, 4] },
    { filter: { a: { $bitsAllClear: [1, 5] } }, ids: [2, 3] },
    { filter: { a: { $bitsAllClear: new Binary(Buffer.from('ID==', 'base64')) } }, ids: [2, 3] },
    { filter: { a: { $bitsAnyClear: [1, 5] } }, ids: [2, 3] },
    { filter: { a: { $bitsAnyClear: 35 } }, ids: [1, 2, 3, 4] },
  ];
  it.each(rows)('%o', async ({ filter, ids }) => {
    const c = testDb.fresh();
    await c.insertMany(docs as Document[]);
    expect((await c.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual(ids);
  });
});

describe('DBRefs in queries', () => {
  // https://www.mongodb.com/docs/manual/reference/database-references/#dbrefs: a DBRef is the document
  // {$ref, $id, $db}; its fields are queried by name ('refs.$id', $elemMatch: {$id}).
  const a = new ObjectId('64b7f0c2a1b2c3d4e5f60718');
  const b = new ObjectId('64b7f0c2a1b2c3d4e5f60719');
  const rows: Array<{ name: string; filter: Document; ids: number[] }> = [
    { name: '$elemMatch on $id', filter: { refs: { $elemMatch: { $id: b } } }, ids: [1] },
    { name: '$elemMatch on $ref and $id', filter: { refs: { $elemMatch: { $ref: 'users', $id: a } } }, ids: [1, 2] },
    { name: "the dotted path 'refs.$id'", filter: { 'refs.$id': b }, ids: [1] },
    { name: 'a whole DBRef', filter: { owner: new DBRef('users', a) }, ids: [2] },
  ];
  it.each(rows)('$name', async ({ filter, ids }) => {
    const c = testDb.fresh();
    await c.insertMany([
      { _id: 1 as never, refs: [new DBRef('users', a), new DBRef('users', b)] },
      { _id: 2 as never, refs: [new DBRef('users', a)], owner: new DBRef('users', a) },
    ]);
    expect((await c.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id)).toEqual(ids);
  });

  it('reads a DBRef back as a DBRef', async () => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, owner: new DBRef('users', a, 'other') });
    const back = await c.findOne({ _id: 1 as never });
    expect(back?.owner).toBeInstanceOf(DBRef);
    expect(back?.owner).toMatchObject({ collection: 'users', oid: a, db: 'other' });
  });
});

describe('hint() without a sort', () => {
  // https://www.mongodb.com/docs/manual/reference/method/cursor.hint/: the query runs on the hinted
  // index, so without a sort the documents come in that index's order; {$natural: 1} is a collection
  // scan in insertion order, {$natural: -1} the reverse.
  const docs = [
    { _id: 'c', a: 2 },
    { _id: 'a', a: 3 },
    { _id: 'b', a: 1 },
  ];
  const rows: Array<{ name: string; hint: Document | string; ids: string[] }> = [
    { name: 'an index on {a: 1} by key', hint: { a: 1 }, ids: ['b', 'c', 'a'] },
    { name: 'an index on {a: -1} by name', hint: 'a_desc', ids: ['a', 'c', 'b'] },
    { name: 'the _id index', hint: { _id: 1 }, ids: ['a', 'b', 'c'] },
    { name: '$natural: 1', hint: { $natural: 1 }, ids: ['c', 'a', 'b'] },
    { name: '$natural: -1', hint: { $natural: -1 }, ids: ['b', 'a', 'c'] },
  ];
  it.each(rows)('$name', async ({ hint, ids }) => {
    const c = testDb.fresh();
    await c.createIndex({ a: 1 });
    await c.createIndex({ a: -1 }, { name: 'a_desc' });
    for (const d of docs) await c.insertOne(d as Document);
    expect((await c.find({}).hint(hint).toArray()).map((d) => d._id)).toEqual(ids);
  });

  it('a hinted sort still sorts', async () => {
    const c = testDb.fresh();
    await c.createIndex({ a: 1 });
    await c.insertMany(docs as Document[]);
    expect((await c.find({}).hint({ a: 1 }).sort({ _id: -1 }).toArray()).map((d) => d._id)).toEqual(['c', 'b', 'a']);
  });
});

describe('array projections', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/projection/elemMatch/ (the first element
  // matching, the field left out when none does) and .../projection/positional/ (the first element the
  // query matched in that array).
  const doc = {
    _id: 1,
    zipcode: '63109',
    students: [
      { name: 'john', school: 102, age: 10 },
      { name: 'jess', school: 102, age: 11 },
      { name: 'jeff', school: 108, age: 15 },
    ],
    grades: [80, 85, 90],
  };
  const rows: Array<{ name: string; filter: Document; projection: Document; out: Document }> = [
    {
      name: '$elemMatch with operators',
      filter: {},
      projection: { students: { $elemMatch: { school: 102, age: { $gt: 10 } } } },
      out: { _id: 1, students: [{ name: 'jess', school: 102, age: 11 }] },
    },
    { name: '$elemMatch matching nothing leaves the field out', filter: {}, projection: { students: { $elemMatch: { school: 999 } } }, out: { _id: 1 } },
    { name: '$elemMatch beside an included field', filter: {}, projection: { zipcode: 1, students: { $elemMatch: { age: { $gte: 15 } } } }, out: { _id: 1, zipcode: '63109', students: [{ name: 'jeff', school: 108, age: 15 }] } },
    { name: 'positional $ of a value query', filter: { grades: { $gte: 85 } }, projection: { 'grades.$': 1 }, out: { _id: 1, grades: [85] } },
    { name: 'positional $ of an element field query', filter: { 'students.school': 108 }, projection: { 'students.$': 1, zipcode: 1 }, out: { _id: 1, zipcode: '63109', students: [{ name: 'jeff', school: 108, age: 15 }] } },
  ];
  it.each(rows)('$name', async ({ filter, projection, out }) => {
    const c = testDb.fresh();
    await c.insertOne(doc as Document);
    expect(await c.findOne(filter, { projection })).toEqual(out);
  });

  it('positional $ without a query on the array fails', async () => {
    const c = testDb.fresh();
    await c.insertOne(doc as Document);
    const err = await failure(c.findOne({ zipcode: '63109' }, { projection: { 'grades.$': 1 } }));
    expect(err?.code).toBe(51246);
  });
});

describe('field names starting with $', () => {
  // https://www.mongodb.com/docs/manual/core/dot-dollar-considerations/dollar-prefix/: inserts (and
  // upserts that insert) may store $-prefixed field names, top level included; an update of an existing
  // document may not write one at top level; _id may never hold one.
  it('an insert stores top-level and nested $ fields', async () => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, $price: 50, quantity: 30 });
    await c.insertOne({ _id: 2 as never, $id: 'h1961-01', location: { $db: 'novels', $ref: '2007042768', $inc: true } });
    expect(await c.find().sort({ _id: 1 }).toArray()).toEqual([
      { _id: 1, $price: 50, quantity: 30 },
      { _id: 2, $id: 'h1961-01', location: { $db: 'novels', $ref: '2007042768', $inc: true } },
    ]);
  });

  it('an upsert that inserts stores a $ field; the same update of an existing document fails', async () => {
    const c = testDb.fresh();
    await c.updateOne({ date: '2021-07-07' }, { $set: { phone: 25.17, $hotel: 320.1 } } as Document, { upsert: true });
    expect(await c.findOne({}, { projection: { _id: 0 } })).toEqual({ date: '2021-07-07', phone: 25.17, $hotel: 320.1 });
    const err = await failure(c.updateOne({ date: '2021-07-07' }, { $set: { phone: 25.17, $hotel: 320.1 } } as Document, { upsert: true }));
    expect(err?.code).toBe(52);
  });

  it('a replacement of an existing document may not hold a top-level $ field', async () => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 'E123' as never, address: { $number: 123 } });
    const err = await failure(c.replaceOne({ _id: 'E123' as never }, { address: { $number: 124 }, $rooms: { br: 2 } }));
    expect(err?.code).toBe(52);
    expect(await c.findOne({ _id: 'E123' as never })).toEqual({ _id: 'E123', address: { $number: 123 } });
  });

  it('an _id holding a $ field is refused', async () => {
    const c = testDb.fresh();
    const err = await failure(c.insertOne({ _id: { $oid: 'x' } as never }));
    expect(err?.code).toBe(52);
    expect(err?.message).toContain("_id fields may not contain '$'-prefixed fields");
  });
});

describe('__proto__ is an ordinary field name', () => {
  // https://www.mongodb.com/docs/manual/core/document/#field-names: any string is a field name; a
  // document with a __proto__ field is stored, queried, updated and returned like any other.
  const withProto = (): Document => JSON.parse('{"_id": 1, "__proto__": {"x": 1}, "a": {"__proto__": 2}}');
  const own = (d: Document | null, key: string): unknown => (d ? Object.getOwnPropertyDescriptor(d, key)?.value : undefined);

  it('round-trips', async () => {
    const c = testDb.fresh();
    await c.insertOne(withProto());
    const back = await c.findOne({ _id: 1 as never });
    expect(Object.keys(back!)).toEqual(['_id', '__proto__', 'a']);
    expect(own(back, '__proto__')).toEqual({ x: 1 });
    expect(own(back!.a, '__proto__')).toBe(2);
  });

  it('is queried, updated and projected by name', async () => {
    const c = testDb.fresh();
    await c.insertOne(withProto());
    expect(await c.countDocuments(JSON.parse('{"__proto__.x": 1}'))).toBe(1);
    await c.updateOne({ _id: 1 as never }, JSON.parse('{"$set": {"__proto__.y": 2}, "$inc": {"__proto__.x": 1}}'));
    const back = await c.findOne({ _id: 1 as never }, { projection: JSON.parse('{"__proto__": 1}') });
    expect(Object.keys(back!)).toEqual(['_id', '__proto__']);
    expect(own(back, '__proto__')).toEqual({ x: 2, y: 2 });
  });

  it('is a $rename destination like any other name (__proto__ and __proto__x)', async () => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, a: { polluted: 1 }, b: 2, keep: 3 });
    const res = await c.updateOne({ _id: 1 as never }, { $rename: { a: '__proto__', b: '__proto__x' } });
    expect(res.modifiedCount).toBe(1);
    expect(({} as Document).polluted).toBeUndefined();
    const back = await c.findOne({ _id: 1 as never });
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(Object.keys(back!).sort()).toEqual(['__proto__', '__proto__x', '_id', 'keep']);
    expect(own(back, '__proto__')).toEqual({ polluted: 1 });
    expect(own(back, '__proto__x')).toBe(2);
    expect(await c.countDocuments(JSON.parse('{"__proto__.polluted": 1}'))).toBe(1);
  });

  it('inherited names are not fields', async () => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, a: 1 });
    expect(await c.countDocuments({ constructor: { $exists: true } })).toBe(0);
    expect(await c.countDocuments(JSON.parse('{"__proto__": {"$exists": true}}'))).toBe(0);
  });
});
