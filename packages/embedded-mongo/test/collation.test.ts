// Collation, one table row per case, each with the result MongoDB documents. Like semantics.test.ts it
// talks only through the driver (and mongoose) to `inject('mongoUri')`, so every row holds for a real
// MongoDB too (MONGODB_URI); the last block asks a private embedded server about the options it refuses
// although mongod accepts them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoClient, MongoServerError, type Collection, type CollationOptions, type Document } from 'mongodb';
import mongoose from 'mongoose';
import { startEmbeddedMongo, type EmbeddedMongo } from '../src/index.js';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('collation');

const errorOf = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

/** Whether an explain output (any server's shape) shows a scan of the named index. */
const usesIndex = (explain: Document, name: string): boolean => JSON.stringify(explain).includes(`"indexName":"${name}"`);

// The documents of the collation examples on the pages below (café, cafe, cafE).
const cafes = [
  { _id: 1, category: 'café', status: 'A' },
  { _id: 2, category: 'cafe', status: 'a' },
  { _id: 3, category: 'cafE', status: 'a' },
];

describe('string comparisons under a collation', () => {
  // https://www.mongodb.com/docs/manual/reference/collation/: strength 1 compares base characters only,
  // 2 adds diacritics, 3 (the default) adds case; caseLevel with strength 1 compares base characters
  // and case. .../reference/method/testDb.db.collection.findOneAndUpdate/ (Specify Collation) and
  // .../deleteMany/ use these documents with { locale: "fr", strength: 1 }.
  const rows: Array<{ name: string; filter: Document; collation?: CollationOptions; ids: number[] }> = [
    { name: 'no collation: binary equality', filter: { category: 'cafe' }, ids: [2] },
    { name: 'strength 1 ignores accents and case', filter: { category: 'cafe' }, collation: { locale: 'fr', strength: 1 }, ids: [1, 2, 3] },
    { name: 'strength 2 ignores case only', filter: { category: 'cafe' }, collation: { locale: 'fr', strength: 2 }, ids: [2, 3] },
    { name: 'strength 3 tells case apart', filter: { category: 'cafe' }, collation: { locale: 'fr', strength: 3 }, ids: [2] },
    { name: 'caseLevel with strength 1 ignores accents, not case', filter: { category: 'cafe' }, collation: { locale: 'fr', strength: 1, caseLevel: true }, ids: [1, 2] },
    { name: 'the findOneAndUpdate example filter, both fields', filter: { category: 'cafe', status: 'A' }, collation: { locale: 'fr', strength: 1 }, ids: [1, 2, 3] },
    { name: '$ne', filter: { category: { $ne: 'CAFE' } }, collation: { locale: 'fr', strength: 2 }, ids: [1] },
    { name: '$in', filter: { category: { $in: ['CAFÉ', 'tea'] } }, collation: { locale: 'fr', strength: 2 }, ids: [1] },
    { name: '$nin', filter: { category: { $nin: ['CAFÉ'] } }, collation: { locale: 'fr', strength: 2 }, ids: [2, 3] },
    { name: '$gt bounds strings by the collation', filter: { category: { $gt: 'CAFE' } }, collation: { locale: 'fr', strength: 2 }, ids: [1] },
    { name: '$lte bounds strings by the collation', filter: { category: { $lte: 'CAFE' } }, collation: { locale: 'fr', strength: 2 }, ids: [2, 3] },
    { name: 'an embedded document compares its strings by the collation', filter: { doc: { c: 'CAFE' } }, collation: { locale: 'fr', strength: 2 }, ids: [2, 3] },
    { name: 'an array element matches by the collation', filter: { tags: 'CAFE' }, collation: { locale: 'fr', strength: 1 }, ids: [1, 2, 3] },
    { name: '$all', filter: { tags: { $all: ['CAFE'] } }, collation: { locale: 'fr', strength: 1 }, ids: [1, 2, 3] },
    { name: '$elemMatch', filter: { tags: { $elemMatch: { $eq: 'CAFE' } } }, collation: { locale: 'fr', strength: 2 }, ids: [2, 3] },
    // .../reference/operator/query/regex/ : $regex is not collation-aware.
    { name: '$regex ignores the collation', filter: { category: { $regex: '^cafe$' } }, collation: { locale: 'fr', strength: 1 }, ids: [2] },
    // .../reference/operator/query/in/: a regex in the list matches by pattern, the other values by equality.
    { name: '$in with a regex: the strings by the collation', filter: { category: { $in: [/^tea/, 'CAFE'] } }, collation: { locale: 'fr', strength: 2 }, ids: [2, 3] },
    { name: '$in with a regex: the regex by pattern', filter: { category: { $in: [/^caf/, 'tea'] } }, collation: { locale: 'fr', strength: 2 }, ids: [1, 2, 3] },
    { name: '$nin with a regex', filter: { category: { $nin: [/é$/, 'CAFE'] } }, collation: { locale: 'fr', strength: 2 }, ids: [] },
  ];
  it.each(rows)('$name', async ({ filter, collation, ids }) => {
    const c = testDb.fresh();
    await c.insertMany(cafes.map((d) => ({ ...d, doc: { c: d.category }, tags: [d.category] })) as Document[]);
    const found = await c.find(filter, collation ? { collation } : {}).sort({ _id: 1 }).toArray();
    expect(found.map((d) => d._id)).toEqual(ids);
    expect(await c.countDocuments(filter, collation ? { collation } : {})).toBe(ids.length);
  });

  it('findOneAndUpdate, updateMany, deleteMany and distinct take the collation', async () => {
    // The findOneAndUpdate example returns { _id: 1, category: "café", status: "A" } (the document before).
    const c = testDb.fresh();
    await c.insertMany(cafes as Document[]);
    const fr1 = { locale: 'fr', strength: 1 };
    expect(await c.findOneAndUpdate({ category: 'cafe' }, { $set: { status: 'Updated' } }, { collation: fr1, sort: { _id: 1 } })).toEqual(cafes[0]);
    expect((await c.updateMany({ category: 'CAFE' }, { $set: { seen: true } }, { collation: fr1 })).modifiedCount).toBe(3);
    expect((await c.distinct('category', {}, { collation: fr1 })).length).toBe(1);
    expect((await c.deleteMany({ category: 'cafe', status: 'a' }, { collation: { locale: 'fr', strength: 2 } })).deletedCount).toBe(2);
    expect((await c.find().toArray()).map((d) => d._id)).toEqual([1]);
  });
});

describe('updates under a collation', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/update/positional/: `$` is the first element
  // the query matched, and the query matches by the operation's collation; .../reference/command/update/:
  // the collation applies to the whole operation, arrayFilters included.
  it('the positional $ and array filters match strings by the collation', async () => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, tags: ['tea', 'CAFE'] });
    const fr2 = { locale: 'fr', strength: 2 };
    expect((await c.updateOne({ tags: 'cafe' }, { $set: { 'tags.$': 'coffee' } }, { collation: fr2 })).modifiedCount).toBe(1);
    await c.updateOne({ _id: 1 as never }, { $set: { 'tags.$[t]': 'water' } }, { arrayFilters: [{ t: 'TEA' }], collation: fr2 });
    expect((await c.findOne({ _id: 1 as never }))?.tags).toEqual(['water', 'coffee']);
  });

  // https://www.mongodb.com/docs/manual/reference/collation/#operations-that-support-collation: an update
  // compares by its collation; the operators that compare values ($pull and $pullAll removing equal
  // elements, $addToSet skipping one already there, $min/$max, $push's $sort) do so too. With { locale:
  // 'en' } (strength 3) lower case sorts before upper case ('b' < 'B', 'a' < 'B'), where code units put
  // every upper-case letter first ('B' < 'a').
  const fr1 = { locale: 'fr', strength: 1 };
  const fr2 = { locale: 'fr', strength: 2 };
  const rows: Array<{ name: string; start: Document; update: Document; collation?: CollationOptions; result: Document }> = [
    { name: '$pull a value', start: { tags: ['café', 'cafe', 'cafE', 'tea'] }, update: { $pull: { tags: 'CAFE' } }, collation: fr2, result: { tags: ['café', 'tea'] } },
    { name: '$pull a value, binary', start: { tags: ['café', 'cafe', 'cafE', 'tea'] }, update: { $pull: { tags: 'CAFE' } }, result: { tags: ['café', 'cafe', 'cafE', 'tea'] } },
    { name: '$pull a condition', start: { tags: ['café', 'cafe', 'tea'] }, update: { $pull: { tags: { $in: ['CAFE'] } } }, collation: fr1, result: { tags: ['tea'] } },
    { name: '$pull a document condition', start: { items: [{ k: 'A' }, { k: 'b' }] }, update: { $pull: { items: { k: 'a' } } }, collation: fr2, result: { items: [{ k: 'b' }] } },
    { name: '$pullAll', start: { tags: ['café', 'cafe', 'cafE', 'tea'] }, update: { $pullAll: { tags: ['CAFE', 'x'] } }, collation: fr1, result: { tags: ['tea'] } },
    { name: '$pullAll, binary', start: { tags: ['café', 'cafe', 'cafE', 'tea'] }, update: { $pullAll: { tags: ['cafE'] } }, result: { tags: ['café', 'cafe', 'tea'] } },
    { name: '$addToSet an equal string', start: { tags: ['cafe'] }, update: { $addToSet: { tags: 'CAFE' } }, collation: fr2, result: { tags: ['cafe'] } },
    { name: '$addToSet $each, equal among themselves', start: { tags: [] }, update: { $addToSet: { tags: { $each: ['Tea', 'TEA', 'café'] } } }, collation: fr2, result: { tags: ['Tea', 'café'] } },
    { name: '$addToSet, binary', start: { tags: ['cafe'] }, update: { $addToSet: { tags: 'CAFE' } }, result: { tags: ['cafe', 'CAFE'] } },
    { name: '$max by the collation', start: { v: 'b' }, update: { $max: { v: 'B' } }, collation: { locale: 'en' }, result: { v: 'B' } },
    { name: '$max, binary', start: { v: 'b' }, update: { $max: { v: 'B' } }, result: { v: 'b' } },
    { name: '$max of an equal string', start: { v: 'b' }, update: { $max: { v: 'B' } }, collation: fr2, result: { v: 'b' } },
    { name: '$min by the collation', start: { v: 'B' }, update: { $min: { v: 'a' } }, collation: { locale: 'en' }, result: { v: 'a' } },
    { name: '$min, binary', start: { v: 'B' }, update: { $min: { v: 'a' } }, result: { v: 'B' } },
    { name: '$push with $sort', start: { tags: ['b'] }, update: { $push: { tags: { $each: ['A', 'a', 'B'], $sort: 1 } } }, collation: { locale: 'en' }, result: { tags: ['a', 'A', 'b', 'B'] } },
    { name: '$push with $sort, binary', start: { tags: ['b'] }, update: { $push: { tags: { $each: ['A', 'a', 'B'], $sort: 1 } } }, result: { tags: ['A', 'B', 'a', 'b'] } },
    {
      name: '$push with $sort by a field',
      start: { items: [] },
      update: { $push: { items: { $each: [{ k: 'B' }, { k: 'a' }], $sort: { k: 1 } } } },
      collation: { locale: 'en' },
      result: { items: [{ k: 'a' }, { k: 'B' }] },
    },
  ];
  it.each(rows)('$name', async ({ start, update, collation, result }) => {
    const c = testDb.fresh();
    await c.insertOne({ _id: 1 as never, ...start });
    await c.updateOne({ _id: 1 as never }, update, collation ? { collation } : {});
    expect(await c.findOne({ _id: 1 as never })).toEqual({ _id: 1, ...result });
  });

  it("a collection's default collation reaches the update operators, and findOneAndUpdate's", async () => {
    const c = await testDb.db.createCollection(testDb.uniqueName('c'), { collation: fr2 });
    await c.insertOne({ _id: 1 as never, tags: ['cafe', 'tea'] });
    await c.updateOne({ _id: 1 as never }, { $addToSet: { tags: 'CAFE' } });
    expect((await c.findOneAndUpdate({ _id: 1 as never }, { $pull: { tags: 'TEA' } } as Document, { returnDocument: 'after' }))?.tags).toEqual(['cafe']);
  });

  it('an upsert inserts what the operators give under the collation', async () => {
    const c = testDb.fresh();
    await c.updateOne({ _id: 1 as never }, { $addToSet: { tags: { $each: ['tea', 'TEA', 'Tea'] } } }, { upsert: true, collation: fr2 });
    expect(await c.findOne({ _id: 1 as never })).toEqual({ _id: 1, tags: ['tea'] });
  });
});

describe('sorts under a collation', () => {
  // https://www.mongodb.com/docs/manual/reference/collation/: numericOrdering compares digit substrings
  // as numbers (the Restrictions example, with its documented order); caseFirst "upper" sorts upper
  // case before lower case, "lower" the reverse.
  const numeric = ['1', '2', '2.1', '-2.1', '2.2', '2.10', '2.20', '-10', '10', '20', '20.1'];
  const rows: Array<{ name: string; values: string[]; collation?: CollationOptions; sorted: string[] }> = [
    { name: 'no collation: by code unit', values: ['10', '9', '2'], sorted: ['10', '2', '9'] },
    { name: "numericOrdering: '9' before '10'", values: ['10', '9', '2'], collation: { locale: 'en', numericOrdering: true }, sorted: ['2', '9', '10'] },
    {
      name: 'numericOrdering: the documented example',
      values: numeric,
      collation: { locale: 'en_US', numericOrdering: true },
      sorted: ['-2.1', '-10', '1', '2', '2.1', '2.2', '2.10', '2.20', '10', '20', '20.1'],
    },
    { name: "caseFirst 'upper'", values: ['b', 'a', 'B', 'A'], collation: { locale: 'en', caseFirst: 'upper' }, sorted: ['A', 'a', 'B', 'b'] },
    { name: "caseFirst 'lower'", values: ['b', 'A', 'B', 'a'], collation: { locale: 'en', caseFirst: 'lower' }, sorted: ['a', 'A', 'b', 'B'] },
    { name: 'a locale orders letters, not code units', values: ['b', 'é', 'a', 'Z'], collation: { locale: 'en' }, sorted: ['a', 'b', 'é', 'Z'] },
  ];
  it.each(rows)('$name', async ({ values, collation, sorted }) => {
    const c = testDb.fresh();
    await c.insertMany(values.map((n, i) => ({ _id: i, n })) as Document[]);
    const found = await c.find({}, collation ? { collation } : {}).sort({ n: 1 }).toArray();
    expect(found.map((d) => d.n)).toEqual(sorted);
    // An aggregate $sort behind a $project (not pushed down to the query) sorts alike.
    const agg = await c.aggregate([{ $project: { n: 1 } }, { $sort: { n: 1 } }], collation ? { collation } : {}).toArray();
    expect(agg.map((d) => d.n)).toEqual(sorted);
  });
});

describe('aggregate with a collation', () => {
  // https://www.mongodb.com/docs/manual/reference/method/testDb.db.collection.aggregate/ (Specify a Collation):
  // the pipeline's $match compares by { locale: "fr", strength: 1 }.
  it('$match at the start and after other stages, and $sort', async () => {
    const c = testDb.fresh();
    await c.insertMany(cafes as Document[]);
    const fr1 = { collation: { locale: 'fr', strength: 1 } };
    const leading = await c.aggregate([{ $match: { status: 'A' } }, { $sort: { _id: -1 } }], fr1).toArray();
    expect(leading.map((d) => d._id)).toEqual([3, 2, 1]);
    const later = await c.aggregate([{ $project: { category: 1 } }, { $match: { category: 'CAFE' } }, { $sort: { _id: 1 } }], fr1).toArray();
    expect(later.map((d) => d._id)).toEqual([1, 2, 3]);
    const binary = await c.aggregate([{ $project: { category: 1 } }, { $match: { category: 'CAFE' } }]).toArray();
    expect(binary).toEqual([]);
  });

  // .../reference/collation/#operations-that-support-collation: the aggregation pipeline compares by
  // the collation throughout: $group puts keys it holds equal in one group ($sortByCount is a $group
  // and a $sort, .../reference/operator/aggregation/sortByCount/), and $facet's sub-pipelines use it
  // (mongod's jstests/aggregation/sources/match/collation_match.js).
  const rows: Array<{ name: string; pipeline: Document[]; collation?: CollationOptions; result: Document[] }> = [
    { name: '$group at strength 1: one group', pipeline: [{ $group: { _id: '$category', n: { $sum: 1 } } }, { $project: { _id: 0, n: 1 } }], collation: { locale: 'fr', strength: 1 }, result: [{ n: 3 }] },
    {
      name: '$group at strength 2: accents apart',
      pipeline: [{ $group: { _id: '$category', ids: { $push: '$_id' } } }, { $project: { _id: 0, ids: 1 } }, { $sort: { ids: 1 } }],
      collation: { locale: 'fr', strength: 2 },
      result: [{ ids: [1] }, { ids: [2, 3] }],
    },
    { name: '$group, binary: three groups', pipeline: [{ $group: { _id: '$category', n: { $sum: 1 } } }, { $sort: { _id: 1 } }], result: [{ _id: 'cafE', n: 1 }, { _id: 'cafe', n: 1 }, { _id: 'café', n: 1 }] },
    { name: '$group by a document key', pipeline: [{ $group: { _id: { s: '$status' }, n: { $sum: 1 } } }], collation: { locale: 'fr', strength: 2 }, result: [{ _id: { s: 'A' }, n: 3 }] },
    { name: '$sortByCount', pipeline: [{ $sortByCount: '$status' }, { $project: { _id: 0, count: 1 } }], collation: { locale: 'fr', strength: 2 }, result: [{ count: 3 }] },
    { name: '$facet', pipeline: [{ $facet: { m: [{ $match: { category: 'CAFE' } }, { $count: 'n' }] } }], collation: { locale: 'fr', strength: 2 }, result: [{ m: [{ n: 2 }] }] },
  ];
  it.each(rows)('$name', async ({ pipeline, collation, result }) => {
    const c = testDb.fresh();
    await c.insertMany(cafes as Document[]);
    expect(await c.aggregate(pipeline, collation ? { collation } : {}).toArray()).toEqual(result);
  });
});

describe('indexes with a collation', () => {
  // https://www.mongodb.com/docs/manual/core/index-case-insensitive/: an index with { locale: 'en',
  // strength: 2 } is used by queries with the same collation (three results for "apple"), not by a
  // query without it (one result) or with strength 1 (three results). A unique index compares keys by
  // its collation, so at strength 2 'Abc' and 'abc' are one key (E11000) and 'ábc' another.
  it('a query uses the index only with the same collation', async () => {
    const c = testDb.fresh();
    await c.createIndex({ type: 1 }, { collation: { locale: 'en', strength: 2 } });
    await c.insertMany([{ type: 'apple' }, { type: 'Apple' }, { type: 'APPLE' }]);
    const rows: Array<{ collation?: CollationOptions; found: number; index: boolean }> = [
      { found: 1, index: false },
      { collation: { locale: 'en', strength: 2 }, found: 3, index: true },
      { collation: { locale: 'en', strength: 1 }, found: 3, index: false },
    ];
    for (const { collation, found, index } of rows) {
      const cursor = () => c.find({ type: 'apple' }, collation ? { collation } : {});
      expect(await cursor().toArray()).toHaveLength(found);
      expect(usesIndex(await cursor().explain(), 'type_1')).toBe(index);
    }
    const [, spec] = await c.listIndexes().toArray();
    expect(spec.collation).toMatchObject({ locale: 'en', caseLevel: false, caseFirst: 'off', strength: 2, numericOrdering: false, alternate: 'non-ignorable', maxVariable: 'punct', normalization: false, backwards: false });
  });

  const unique: Array<{ name: string; first: string; second: string; duplicate: boolean }> = [
    { name: "'Abc' then 'abc' at strength 2", first: 'Abc', second: 'abc', duplicate: true },
    { name: "'abc' then 'ábc' at strength 2", first: 'abc', second: 'ábc', duplicate: false },
  ];
  it.each(unique)('unique index: $name', async ({ first, second, duplicate }) => {
    const c = testDb.fresh();
    await c.createIndex({ name: 1 }, { unique: true, collation: { locale: 'en', strength: 2 } });
    await c.insertOne({ name: first });
    const err = await errorOf(c.insertOne({ name: second }));
    if (duplicate) expect((err as MongoServerError).code).toBe(11000);
    else expect(err).toBeUndefined();
  });

  it('a document may change its key to one its collation holds equal', async () => {
    const c = testDb.fresh();
    await c.createIndex({ name: 1 }, { unique: true, collation: { locale: 'en', strength: 2 } });
    await c.insertOne({ _id: 1 as never, name: 'Abc' });
    expect((await c.updateOne({ _id: 1 as never }, { $set: { name: 'ABC' } })).modifiedCount).toBe(1);
    expect((await errorOf(c.insertOne({ name: 'abc' })) as MongoServerError).code).toBe(11000);
  });

  it('building a unique index over existing duplicates fails with E11000', async () => {
    const c = testDb.fresh();
    await c.insertMany([{ name: 'Abc' }, { name: 'abc' }]);
    const err = await errorOf(c.createIndex({ name: 1 }, { unique: true, collation: { locale: 'en', strength: 2 } }));
    expect((err as MongoServerError).code).toBe(11000);
  });
});

describe('a collection with a default collation', () => {
  // https://www.mongodb.com/docs/manual/core/index-case-insensitive/ (Case Insensitive Indexes on
  // Collections with a Default Collation): indexes and queries inherit { locale: 'en_US', strength: 2 }
  // (three "betsy" results, using the index), and a query with { locale: 'en_US' } finds one.
  // .../reference/command/listCollections/ shows the collation in `options`, filled in.
  it('indexes and queries inherit it; a query may ask for another', async () => {
    const c = await testDb.db.createCollection(testDb.uniqueName('c'), { collation: { locale: 'en_US', strength: 2 } });
    await c.createIndex({ first_name: 1 });
    await c.insertMany([{ first_name: 'Betsy' }, { first_name: 'BETSY' }, { first_name: 'betsy' }]);
    expect(await c.find({ first_name: 'betsy' }).toArray()).toHaveLength(3);
    expect(usesIndex(await c.find({ first_name: 'betsy' }).explain(), 'first_name_1')).toBe(true);
    expect(await c.find({ first_name: 'betsy' }, { collation: { locale: 'en_US' } }).toArray()).toHaveLength(1);
    expect(await c.find({ first_name: 'betsy' }, { collation: { locale: 'simple' } }).toArray()).toHaveLength(1);
    // A range and a descending sort by the collation (binary order would give 'bob', 'betsy').
    await c.insertMany([{ first_name: 'alice' }, { first_name: 'bob' }, { first_name: 'Carl' }]);
    const last = () => c.find({ first_name: { $gt: 'B' } }).sort({ first_name: -1 }).limit(2);
    expect((await last().toArray()).map((d) => d.first_name)).toEqual(['Carl', 'bob']);
    expect(usesIndex(await last().explain(), 'first_name_1')).toBe(true);

    const filled = { locale: 'en_US', caseLevel: false, caseFirst: 'off', strength: 2, numericOrdering: false, alternate: 'non-ignorable', maxVariable: 'punct', normalization: false, backwards: false };
    const [info] = await testDb.db.listCollections({ name: c.collectionName }).toArray();
    expect((info as Document).options.collation).toMatchObject(filled);
    const indexes = await c.listIndexes().toArray();
    expect(indexes.map((i) => i.collation)).toEqual([expect.objectContaining(filled), expect.objectContaining(filled)]);
  });

  it('the _id index has it too: "a" and "A" are one _id at strength 2', async () => {
    const c = await testDb.db.createCollection(testDb.uniqueName('c'), { collation: { locale: 'en', strength: 2 } });
    await c.insertOne({ _id: 'A' as never });
    const err = await errorOf(c.insertOne({ _id: 'a' as never }));
    expect((err as MongoServerError).code).toBe(11000);
    expect(await c.findOne({ _id: 'a' as never })).toEqual({ _id: 'A' });
  });

  // .../core/schema-validation/: the validator is a query on the collection, so it compares by the
  // collection's default collation.
  it('the validator compares strings by it', async () => {
    const c = await testDb.db.createCollection(testDb.uniqueName('c'), { collation: { locale: 'en', strength: 2 }, validator: { status: { $in: ['active', 'closed'] } } });
    await c.insertOne({ status: 'ACTIVE' });
    expect((await errorOf(c.insertOne({ status: 'gone' })) as MongoServerError).code).toBe(121);
  });

  it("an index with collation { locale: 'simple' } keeps binary order", async () => {
    const c = await testDb.db.createCollection(testDb.uniqueName('c'), { collation: { locale: 'en', strength: 2 } });
    await c.createIndex({ k: 1 }, { unique: true, collation: { locale: 'simple' } });
    await c.insertMany([{ k: 'Abc' }, { k: 'abc' }]);
    const [, spec] = await c.listIndexes().toArray();
    expect(spec.collation).toBeUndefined();
  });
});

describe('change streams', () => {
  // A change stream compares by the collation it is opened with, and by the simple collation without
  // one, whatever the collection's default (MongoDB 4.2+, SERVER-39302; .../reference/method/testDb.db.collection.watch/).
  it('a $match in the stream uses the collation of the watch, not the default', async () => {
    const c = await testDb.db.createCollection(testDb.uniqueName('c'), { collation: { locale: 'en', strength: 2 } });
    const plain = c.watch([{ $match: { 'fullDocument.s': 'ABC' } }], { maxAwaitTimeMS: 200 });
    const collated = c.watch([{ $match: { 'fullDocument.s': 'ABC' } }], { maxAwaitTimeMS: 200, collation: { locale: 'en', strength: 2 } });
    expect(await plain.tryNext()).toBeNull();
    expect(await collated.tryNext()).toBeNull();
    await c.insertOne({ s: 'abc' });
    await c.insertOne({ s: 'ABC' });
    try {
      expect(((await plain.next()) as Document).fullDocument.s).toBe('ABC');
      expect(((await collated.next()) as Document).fullDocument.s).toBe('abc');
    } finally {
      await plain.close();
      await collated.close();
    }
  });
});

describe('mongoose', () => {
  // https://mongoosejs.com/docs/api/query.html#Query.prototype.collation(): sends the collation with the find.
  it('Query.collation() finds case-insensitively', async () => {
    const conn = await mongoose.createConnection(testDb.uri, { dbName: testDb.dbName }).asPromise();
    try {
      const Name = conn.model('CollationName', new mongoose.Schema({ first: String }));
      await Name.create([{ first: 'Betsy' }, { first: 'BETSY' }, { first: 'Bob' }]);
      expect(await Name.find({ first: 'betsy' }).collation({ locale: 'en', strength: 2 })).toHaveLength(2);
      expect(await Name.find({ first: 'betsy' })).toHaveLength(0);
    } finally {
      await conn.close();
    }
  });
});

describe('collation documents mongod refuses', () => {
  // mongod parses a collation with its IDL Collation struct (src/mongo/testDb.db/basic_types.idl: strict, a
  // required locale, strength within 0..5, enum values) and then its ICU collator factory
  // (src/mongo/testDb.db/query/collation/collator_factory_icu.cpp: BadValue for an unknown locale and for
  // caseFirst without caseLevel below strength 3, IncompatibleCollationVersion for another ICU version).
  // https://www.mongodb.com/docs/manual/reference/collation/ lists the fields and their values.
  const rows: Array<{ name: string; collation: Document; code: number; message: string }> = [
    { name: 'an unknown field', collation: { locale: 'en', colour: 'red' }, code: 40415, message: "BSON field 'collation.colour' is an unknown field." },
    { name: 'no locale', collation: { strength: 1 }, code: 40414, message: "BSON field 'collation.locale' is missing but a required field" },
    { name: 'strength 6', collation: { locale: 'en', strength: 6 }, code: 51024, message: "BSON field 'collation.strength' value must be <= 5, actual value '6'" },
    { name: 'an unknown locale', collation: { locale: 'xx' }, code: 2, message: "Field 'locale' is invalid in: " },
    { name: 'an unknown caseFirst value', collation: { locale: 'en', caseFirst: 'sideways' }, code: 2, message: "Enumeration value 'sideways' for field 'collation.caseFirst' is not a valid value." },
    { name: 'caseFirst at strength 1 without caseLevel', collation: { locale: 'en', strength: 1, caseFirst: 'upper' }, code: 2, message: "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2" },
    { name: 'a caseLevel that is not a bool', collation: { locale: 'en', caseLevel: 'yes' }, code: 14, message: "BSON field 'collation.caseLevel' is the wrong type 'string'" },
    { name: 'another ICU version', collation: { locale: 'en', version: '1.0' }, code: 161, message: 'Requested collation version 1.0 but the only available collator version was' },
  ];
  it.each(rows)('$name', async ({ collation: raw, code, message }) => {
    const collation = raw as CollationOptions; // deliberately invalid: the driver's type would not let it through
    const c = testDb.fresh();
    await c.insertOne({ n: 'a' });
    for (const run of [
      () => c.find({ n: 'a' }, { collation }).toArray(),
      () => c.aggregate([{ $match: { n: 'a' } }], { collation }).toArray(),
      () => c.createIndex({ n: 1 }, { collation }),
      () => testDb.db.createCollection(`${c.collectionName}_default`, { collation }),
    ]) {
      const err = await errorOf(run());
      expect(err).toBeInstanceOf(MongoServerError);
      expect((err as MongoServerError).code).toBe(code);
      expect((err as MongoServerError).message).toContain(message);
    }
  });
});

describe('collation options the embedded server refuses (mongod accepts them)', () => {
  // Intl.Collator, which the embedded server compares with, has no quaternary or identical strength,
  // no case level above strength 1, no maxVariable, no backwards secondary order outside fr_CA's own,
  // and none of the 'search' variants: each is refused with BadValue instead of comparing differently.
  // README: Known differences. These rows run against a private embedded server, not MONGODB_URI.
  let server: EmbeddedMongo;
  let own: MongoClient;
  beforeAll(async () => {
    server = await startEmbeddedMongo({ port: 0 });
    own = await MongoClient.connect(server.uri);
  });
  afterAll(async () => {
    await own.close();
    await server.stop();
  });

  const rows: Array<{ name: string; collation: Document; message: string }> = [
    { name: 'strength 4', collation: { locale: 'en', strength: 4 }, message: 'strength 4 is not supported' },
    { name: 'strength 5', collation: { locale: 'en', strength: 5 }, message: 'strength 5 is not supported' },
    { name: 'caseLevel at strength 2', collation: { locale: 'en', strength: 2, caseLevel: true }, message: 'caseLevel with strength 2 is not supported' },
    { name: "alternate 'shifted' with maxVariable 'space'", collation: { locale: 'en', alternate: 'shifted', maxVariable: 'space' }, message: "maxVariable 'space' is not supported" },
    { name: 'backwards for en', collation: { locale: 'en', backwards: true }, message: "backwards: true for locale 'en' is not supported" },
    { name: 'the search variant', collation: { locale: 'de@collation=search' }, message: "the 'search' collation variant is not supported" },
  ];
  it.each(rows)('$name', async ({ collation, message }) => {
    const c = own.db('refusals').collection('c');
    const err = await errorOf(c.find({}, { collation: collation as CollationOptions }).toArray());
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(2);
    expect((err as MongoServerError).message).toContain(message);
  });

  it("alternate 'shifted' ignores spaces and punctuation", async () => {
    const c = own.db('refusals').collection('shifted');
    await c.insertMany([{ n: 'a-b c' }, { n: 'abc' }, { n: 'abd' }]);
    const found = await c.find({ n: 'abc' }, { collation: { locale: 'en', alternate: 'shifted' } }).toArray();
    expect(found.map((d) => d.n)).toEqual(['a-b c', 'abc']);
  });
});

describe('what compares strings under a collation and the embedded server refuses', () => {
  // Constructs the embedded server runs in mingo, which compares strings by code unit: under a
  // non-simple collation (the operation's or the collection's default) each is refused with
  // NotImplemented (238) rather than answered by the wrong order (README: Known differences). mongod
  // runs them all, so these rows ask a private embedded server, not MONGODB_URI. Without a collation
  // the same commands run.
  let server: EmbeddedMongo;
  let own: MongoClient;
  beforeAll(async () => {
    server = await startEmbeddedMongo({ port: 0 });
    own = await MongoClient.connect(server.uri);
    await own.db('refusals').collection('docs').insertMany([{ _id: 1 as never, s: 'a', tags: ['a'] }]);
  });
  afterAll(async () => {
    await own.close();
    await server.stop();
  });

  const fr2 = { locale: 'fr', strength: 2 };
  const rows: Array<{ name: string; run: (c: Collection, collation?: CollationOptions) => Promise<unknown>; message: string }> = [
    { name: '$eq in $project', run: (c, collation) => c.aggregate([{ $project: { x: { $eq: ['$s', 'A'] } } }], { collation }).toArray(), message: '$eq in $project' },
    { name: '$expr in find', run: (c, collation) => c.find({ $expr: { $lt: ['$s', 'B'] } }, { collation }).toArray(), message: '$lt in $expr' },
    { name: '$expr in a later $match', run: (c, collation) => c.aggregate([{ $project: { s: 1 } }, { $match: { $expr: { $in: ['$s', ['A']] } } }], { collation }).toArray(), message: '$in in $expr' },
    { name: '$addToSet in $group', run: (c, collation) => c.aggregate([{ $group: { _id: null, s: { $addToSet: '$s' } } }], { collation }).toArray(), message: '$addToSet in $group' },
    { name: '$max in $group', run: (c, collation) => c.aggregate([{ $group: { _id: '$s', m: { $max: '$s' } } }], { collation }).toArray(), message: '$max in $group' },
    { name: '$lookup', run: (c, collation) => c.aggregate([{ $lookup: { from: 'docs', localField: 's', foreignField: 's', as: 'j' } }], { collation }).toArray(), message: '$lookup with a non-simple' },
    { name: '$graphLookup', run: (c, collation) => c.aggregate([{ $graphLookup: { from: 'docs', startWith: '$s', connectFromField: 's', connectToField: 's', as: 'g' } }], { collation }).toArray(), message: '$graphLookup' },
    { name: '$bucket with string boundaries', run: (c, collation) => c.aggregate([{ $bucket: { groupBy: '$s', boundaries: ['a', 'n', 'z'] } }], { collation }).toArray(), message: '$bucket with string boundaries' },
    { name: '$setWindowFields with partitionBy', run: (c, collation) => c.aggregate([{ $setWindowFields: { partitionBy: '$s', output: { n: { $count: {} } } } }], { collation }).toArray(), message: '$setWindowFields' },
    { name: '$merge', run: (c, collation) => c.aggregate([{ $merge: { into: 'merged' } }], { collation }).toArray(), message: '$merge' },
    { name: 'a pipeline update comparing strings', run: (c, collation) => c.updateOne({ _id: 1 as never }, [{ $set: { t: { $eq: ['$s', 'A'] } } }], { collation }), message: '$eq in an update pipeline' },
    { name: '$pull alongside $pop', run: (c, collation) => c.updateOne({ _id: 1 as never }, { $pull: { tags: 'A' }, $pop: { other: 1 } } as Document, { collation }), message: '$pull together with $pop' },
  ];
  it.each(rows)('$name', async ({ run, message }) => {
    const c = own.db('refusals').collection('docs');
    const err = await errorOf(run(c, fr2));
    expect(err).toBeInstanceOf(MongoServerError);
    expect((err as MongoServerError).code).toBe(238);
    expect((err as MongoServerError).message).toContain(message);
    expect((err as MongoServerError).message).toContain('with a non-simple collation is not supported by the embedded server');
    // The same command without a collation, or with the simple one, runs.
    expect(await errorOf(run(c, { locale: 'simple' }))).toBeUndefined();
  });

  it("a collection's default collation is refused alike, and so is a validator that would compare by it", async () => {
    const d = own.db('refusals');
    const c = await d.createCollection('defaulted', { collation: fr2 });
    await c.insertOne({ s: 'a' });
    expect((await errorOf(c.aggregate([{ $project: { x: { $cmp: ['$s', 'A'] } } }]).toArray()) as MongoServerError).code).toBe(238);
    const err = await errorOf(d.createCollection('validated', { collation: fr2, validator: { $expr: { $eq: ['$s', 'a'] } } }));
    expect((err as MongoServerError).code).toBe(238);
    expect((err as MongoServerError).message).toContain('Parsing of collection validator failed');
  });

  it('a change stream whose later stages would compare strings is refused when it opens', async () => {
    const c = own.db('refusals').collection('docs');
    const stream = c.watch([{ $project: { x: { $eq: ['$fullDocument.s', 'A'] } } }], { collation: fr2 });
    const err = await errorOf(stream.tryNext());
    await stream.close();
    expect((err as MongoServerError).code).toBe(238);
  });
});
