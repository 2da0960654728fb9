// $out and $merge through the driver, one table row per case, each with the result MongoDB documents.
// Like semantics.test.ts it talks only to `inject('mongoUri')`, so every row holds for a real MongoDB
// too (MONGODB_URI).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoClient, MongoServerError, type Collection, type Db, type Document } from 'mongodb';

const uri = inject('mongoUri');
const dbName = `aggwrites_${process.pid}_${Date.now()}`;
const otherDbName = `${dbName}_other`;
let client: MongoClient;
let db: Db;
let collections = 0;
const freshName = (): string => `c${++collections}`;

beforeAll(async () => {
  client = await MongoClient.connect(uri);
  db = client.db(dbName);
});

afterAll(async () => {
  await db.dropDatabase();
  await client.db(otherDbName).dropDatabase();
  await client.close();
});

async function failure(run: Promise<unknown>): Promise<MongoServerError> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(MongoServerError);
  return err as MongoServerError;
}

const byId = (c: Collection): Promise<Document[]> => c.find({}, { sort: { _id: 1 } }).toArray();

async function seeded(docs: Document[], options: Document = {}): Promise<Collection> {
  const c = await db.createCollection(freshName(), options);
  if (docs.length > 0) await c.insertMany(docs);
  return c;
}

describe('$out replaces its target atomically', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/: $out writes into a temporary
  // collection holding the target's indexes and options, then replaces the target; "The $out operation
  // does not change any indexes that existed on the previous collection"; "If the aggregation fails,
  // $out does not make any changes to the pre-existing collection"; documents are validated against the
  // target's validator unless bypassDocumentValidation (…/command/aggregate/).
  const validator = { $jsonSchema: { required: ['sku'] } };

  it('keeps the indexes and the validator of the collection it replaces', async () => {
    const source = await seeded([{ _id: 1, sku: 'a' }, { _id: 2, sku: 'b' }]);
    const target = await seeded([{ _id: 9, sku: 'old' }], { validator });
    await target.createIndex({ sku: 1 }, { unique: true });
    await source.aggregate([{ $out: target.collectionName }]).toArray();
    expect(await byId(target)).toEqual([{ _id: 1, sku: 'a' }, { _id: 2, sku: 'b' }]);
    const indexes = await target.listIndexes().toArray();
    expect(indexes.find((i) => i.name === 'sku_1')).toMatchObject({ key: { sku: 1 }, unique: true });
    const [info] = await db.listCollections({ name: target.collectionName }).toArray();
    expect((info as Document).options.validator).toEqual(validator);
  });

  const failures: Array<{ name: string; results: Document[]; code: number }> = [
    { name: 'a duplicate key on a unique index of the target', results: [{ _id: 1, sku: 'a' }, { _id: 2, sku: 'a' }], code: 11000 },
    { name: 'a document the target validator refuses', results: [{ _id: 1, sku: 'a' }, { _id: 2 }], code: 121 },
  ];
  it.each(failures)('fails on $name and leaves the target unchanged', async ({ results, code }) => {
    const source = await seeded(results);
    const target = await seeded([{ _id: 9, sku: 'old' }], { validator });
    await target.createIndex({ sku: 1 }, { unique: true });
    const err = await failure(source.aggregate([{ $out: target.collectionName }]).toArray());
    expect(err.code).toBe(code);
    expect(await byId(target)).toEqual([{ _id: 9, sku: 'old' }]);
    expect((await target.listIndexes().toArray()).map((i) => i.name).sort()).toEqual(['_id_', 'sku_1']);
  });

  it('writes documents the validator refuses under bypassDocumentValidation', async () => {
    const source = await seeded([{ _id: 1 }]);
    const target = await seeded([], { validator });
    await source.aggregate([{ $out: target.collectionName }], { bypassDocumentValidation: true }).toArray();
    expect(await byId(target)).toEqual([{ _id: 1 }]);
  });

  it('writes into another database with the { db, coll } form', async () => {
    const source = await seeded([{ _id: 1, v: 'x' }]);
    await source.aggregate([{ $out: { db: otherDbName, coll: 'copied' } }]).toArray();
    expect(await byId(client.db(otherDbName).collection('copied'))).toEqual([{ _id: 1, v: 'x' }]);
    expect(await db.listCollections({ name: 'copied' }).toArray()).toEqual([]);
  });

  // https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/#restrictions: $out must be
  // the last stage, is not allowed in $facet, $lookup or $unionWith, and cannot write to a capped collection.
  const refusals: Array<{ name: string; pipeline: (target: string) => Document[]; code: number }> = [
    { name: 'not the last stage', pipeline: (t) => [{ $out: t }, { $match: {} }], code: 40601 },
    { name: 'inside $facet', pipeline: (t) => [{ $facet: { a: [{ $out: t }] } }], code: 40600 },
    { name: "inside $lookup's pipeline", pipeline: (t) => [{ $lookup: { from: t, pipeline: [{ $out: t }], as: 'x' } }], code: 51047 },
    { name: "inside $unionWith's pipeline", pipeline: (t) => [{ $unionWith: { coll: t, pipeline: [{ $out: t }] } }], code: 31441 },
  ];
  it.each(refusals)('is refused $name', async ({ pipeline, code }) => {
    const source = await seeded([{ _id: 1 }]);
    const target = freshName();
    const err = await failure(source.aggregate(pipeline(target)).toArray());
    expect(err.code).toBe(code);
    expect(await db.listCollections({ name: target }).toArray()).toEqual([]);
  });

  it('is refused into a capped collection', async () => {
    const source = await seeded([{ _id: 1 }]);
    const target = await seeded([{ _id: 9 }], { capped: true, size: 4096 });
    const err = await failure(source.aggregate([{ $out: target.collectionName }]).toArray());
    expect(err.code).toBe(17152);
    expect(await byId(target)).toEqual([{ _id: 9 }]);
  });
});

describe('$merge', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/: a result matches a target
  // document with the same `on` values (default _id). whenMatched: replace (the result replaces it),
  // keepExisting, merge (default; like $mergeObjects), fail (stop; earlier changes are not reverted) or
  // an update pipeline ($$new is the result, `let` adds variables); whenNotMatched: insert (default),
  // discard, or fail.
  const existing = [
    { _id: 1, a: 1, x: 'old' },
    { _id: 2, a: 2, x: 'old' },
  ];
  const results = [
    { _id: 1, a: 1, y: 'new' },
    { _id: 3, a: 3, y: 'new' },
  ];
  const rows: Array<{ name: string; merge: Document; after: Document[] }> = [
    {
      name: 'defaults: merge, insert',
      merge: {},
      after: [{ _id: 1, a: 1, x: 'old', y: 'new' }, { _id: 2, a: 2, x: 'old' }, { _id: 3, a: 3, y: 'new' }],
    },
    {
      name: 'replace, insert',
      merge: { whenMatched: 'replace', whenNotMatched: 'insert' },
      after: [{ _id: 1, a: 1, y: 'new' }, { _id: 2, a: 2, x: 'old' }, { _id: 3, a: 3, y: 'new' }],
    },
    {
      name: 'keepExisting, insert',
      merge: { whenMatched: 'keepExisting' },
      after: [{ _id: 1, a: 1, x: 'old' }, { _id: 2, a: 2, x: 'old' }, { _id: 3, a: 3, y: 'new' }],
    },
    {
      name: 'merge, discard',
      merge: { whenMatched: 'merge', whenNotMatched: 'discard' },
      after: [{ _id: 1, a: 1, x: 'old', y: 'new' }, { _id: 2, a: 2, x: 'old' }],
    },
    {
      name: 'replace, discard',
      merge: { whenMatched: 'replace', whenNotMatched: 'discard' },
      after: [{ _id: 1, a: 1, y: 'new' }, { _id: 2, a: 2, x: 'old' }],
    },
    {
      name: 'a pipeline reading $$new, insert (an unmatched result is inserted as it is)',
      merge: { whenMatched: [{ $set: { x: '$$new.y' } }] },
      after: [{ _id: 1, a: 1, x: 'new' }, { _id: 2, a: 2, x: 'old' }, { _id: 3, a: 3, y: 'new' }],
    },
    {
      name: 'a pipeline with let variables, discard',
      merge: { let: { bump: { $add: ['$a', 10] } }, whenMatched: [{ $set: { a: '$$bump' } }, { $unset: 'x' }], whenNotMatched: 'discard' },
      after: [{ _id: 1, a: 11 }, { _id: 2, a: 2, x: 'old' }],
    },
  ];
  it.each(rows)('whenMatched/whenNotMatched $name', async ({ merge, after }) => {
    const source = await seeded(results);
    const target = await seeded(existing);
    await source.aggregate([{ $merge: { into: target.collectionName, ...merge } }]).toArray();
    expect(await byId(target)).toEqual(after);
  });

  const failing: Array<{ name: string; merge: Document; code: number; after: Document[] }> = [
    {
      name: 'whenMatched fail stops at a match',
      merge: { whenMatched: 'fail' },
      code: 11000,
      after: [{ _id: 1, a: 1, x: 'old' }, { _id: 2, a: 2, x: 'old' }],
    },
    {
      name: 'whenNotMatched fail stops at a result without a match; the matched one stays merged',
      merge: { whenNotMatched: 'fail' },
      code: 13113,
      after: [{ _id: 1, a: 1, x: 'old', y: 'new' }, { _id: 2, a: 2, x: 'old' }],
    },
  ];
  it.each(failing)('$name', async ({ merge, code, after }) => {
    const source = await seeded(results);
    const target = await seeded(existing);
    const err = await failure(source.aggregate([{ $merge: { into: target.collectionName, ...merge } }]).toArray());
    expect(err.code).toBe(code);
    // Results written before the failure stay, so only the documents it cannot have touched are checked.
    const stored = await byId(target);
    for (const doc of after) expect(stored).toContainEqual(doc);
  });

  it('matches on fields backed by a unique index', async () => {
    const source = await seeded([{ _id: 10, sku: 'a', qty: 5 }, { _id: 11, sku: 'c', qty: 1 }]);
    const target = await seeded([{ _id: 1, sku: 'a', qty: 0 }, { _id: 2, sku: 'b', qty: 0 }]);
    await target.createIndex({ sku: 1 }, { unique: true });
    await source.aggregate([{ $project: { _id: 0 } }, { $merge: { into: target.collectionName, on: 'sku' } }]).toArray();
    const stored = await byId(target);
    expect(stored.slice(0, 2)).toEqual([{ _id: 1, sku: 'a', qty: 5 }, { _id: 2, sku: 'b', qty: 0 }]);
    expect(stored[2]).toMatchObject({ sku: 'c', qty: 1 });
  });

  it('writes into another database with into: { db, coll }', async () => {
    const source = await seeded([{ _id: 1, v: 'x' }]);
    await source.aggregate([{ $merge: { into: { db: otherDbName, coll: 'merged' } } }]).toArray();
    expect(await byId(client.db(otherDbName).collection('merged'))).toEqual([{ _id: 1, v: 'x' }]);
  });

  it("validates what it writes against the target's validator", async () => {
    const source = await seeded([{ _id: 1 }]);
    const target = await seeded([], { validator: { $jsonSchema: { required: ['sku'] } } });
    const err = await failure(source.aggregate([{ $merge: target.collectionName }]).toArray());
    expect(err.code).toBe(121);
    expect(await byId(target)).toEqual([]);
  });

  it('is seen by a change stream on the target', async () => {
    const source = await seeded([{ _id: 1, v: 2 }, { _id: 2, v: 1 }]);
    const target = await seeded([{ _id: 1, v: 1 }]);
    const stream = target.watch([], { maxAwaitTimeMS: 200 });
    // The first round trip opens the stream on the server: every later write is in it.
    expect(await stream.tryNext()).toBeNull();
    await source.aggregate([{ $merge: target.collectionName }]).toArray();
    const first = await stream.next();
    const second = await stream.next();
    await stream.close();
    expect(first).toMatchObject({ operationType: 'update', documentKey: { _id: 1 }, updateDescription: { updatedFields: { v: 2 } } });
    expect(second).toMatchObject({ operationType: 'insert', fullDocument: { _id: 2, v: 1 } });
  });

  // The same page's "Restrictions" and "on" sections; codes as mongod answers them.
  const refusals: Array<{ name: string; pipeline: (target: string) => Document[]; index?: { key: Document; options: Document }; code: number }> = [
    { name: '`on` without a unique index on exactly those fields', pipeline: (t) => [{ $merge: { into: t, on: 'sku' } }], index: { key: { sku: 1 }, options: {} }, code: 51183 },
    {
      name: '`on` backed only by a partial unique index',
      pipeline: (t) => [{ $merge: { into: t, on: 'sku' } }],
      index: { key: { sku: 1 }, options: { unique: true, partialFilterExpression: { sku: { $exists: true } } } },
      code: 51183,
    },
    { name: '`on` other than _id into a missing collection', pipeline: () => [{ $merge: { into: 'nowhere', on: 'sku' } }], code: 51183 },
    { name: 'a result without a value for `on`', pipeline: (t) => [{ $merge: { into: t, on: 'sku' } }], index: { key: { sku: 1 }, options: { unique: true } }, code: 51132 },
    { name: 'keepExisting with discard', pipeline: (t) => [{ $merge: { into: t, whenMatched: 'keepExisting', whenNotMatched: 'discard' } }], code: 51181 },
    { name: 'fail with fail', pipeline: (t) => [{ $merge: { into: t, whenMatched: 'fail', whenNotMatched: 'fail' } }], code: 51181 },
    { name: 'let without a pipeline', pipeline: (t) => [{ $merge: { into: t, let: { v: 1 }, whenMatched: 'merge' } }], code: 51199 },
    { name: 'a stage an update may not run', pipeline: (t) => [{ $merge: { into: t, whenMatched: [{ $match: {} }] } }], code: 72 },
    { name: 'not the last stage', pipeline: (t) => [{ $merge: t }, { $match: {} }], code: 40601 },
    { name: 'inside $facet', pipeline: (t) => [{ $facet: { a: [{ $merge: t }] } }], code: 40600 },
  ];
  it.each(refusals)('is refused: $name', async ({ pipeline, index, code }) => {
    const source = await seeded([{ _id: 1, v: 'x' }]);
    const target = await seeded([{ _id: 1, v: 'old' }]);
    if (index) await target.createIndex(index.key, index.options);
    const err = await failure(source.aggregate(pipeline(target.collectionName)).toArray());
    expect(err.code).toBe(code);
    expect(await byId(target)).toEqual([{ _id: 1, v: 'old' }]);
  });
});
