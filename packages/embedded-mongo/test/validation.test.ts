// Collection validators and the $jsonSchema query operator, through the driver and mongoose only, so
// every row holds for a real MongoDB too (MONGODB_URI). Sources:
// https://www.mongodb.com/docs/manual/core/schema-validation/ (levels, actions, bypass, errInfo),
// https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/ (keywords, omissions).
import { beforeAll, describe, expect, it } from 'vitest';
import { Double, Long, MongoBulkWriteError, MongoServerError, type Collection, type Document } from 'mongodb';
import mongoose from 'mongoose';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('validation');

const person = {
  $jsonSchema: {
    bsonType: 'object',
    required: ['name'],
    properties: {
      name: { bsonType: 'string', minLength: 1 },
      age: { bsonType: 'int', minimum: 0 },
    },
  },
};

async function withValidator(validator: Document, options: Document = {}): Promise<Collection> {
  const name = testDb.uniqueName('c');
  await testDb.db.createCollection(name, { validator, ...options });
  return testDb.db.collection(name);
}

/** The error a write fails with (undefined when it succeeds). */
async function failure(write: Promise<unknown>): Promise<MongoServerError | undefined> {
  return write.then(
    () => undefined,
    (e: unknown) => e as MongoServerError,
  );
}

function expectRefused(err: MongoServerError | undefined, id: unknown): void {
  expect(err).toBeInstanceOf(MongoServerError);
  expect(err!.code).toBe(121);
  expect(err!.message).toBe('Document failed validation');
  expect(err!.errInfo?.failingDocumentId).toEqual(id);
  expect(err!.errInfo?.details?.operatorName).toBe('$jsonSchema');
}

describe('a collection created with a validator', () => {
  it('lists the validator, level and action in its options', async () => {
    const c = await withValidator(person, { validationLevel: 'moderate', validationAction: 'warn' });
    const [info] = await testDb.db.listCollections({ name: c.collectionName }).toArray();
    expect((info as { options: Document }).options).toMatchObject({ validator: person, validationLevel: 'moderate', validationAction: 'warn' });
  });

  it('accepts a valid document and refuses an invalid one with errInfo', async () => {
    const c = await withValidator(person);
    await c.insertOne({ _id: 1 as never, name: 'Ada', age: 36 });
    const err = await failure(c.insertOne({ _id: 2 as never, age: 3 }));
    expectRefused(err, 2);
    expect(err!.errInfo!.details.schemaRulesNotSatisfied).toContainEqual({ operatorName: 'required', specifiedAs: { required: ['name'] }, missingProperties: ['name'] });
    expect(await c.countDocuments()).toBe(1);
  });

  // Numbers keep their BSON type: bsonType 'int' refuses a Long and a Double of the same value.
  const numbers: Array<{ name: string; age: unknown; ok: boolean }> = [
    { name: 'an Int32', age: 5, ok: true },
    { name: 'a Long', age: Long.fromNumber(5), ok: false },
    { name: 'a Double', age: new Double(5), ok: false },
    { name: 'a negative Int32', age: -1, ok: false },
  ];
  it.each(numbers)('bsonType int with $name: accepted $ok', async ({ age, ok }) => {
    const c = await withValidator(person);
    const err = await failure(c.insertOne({ _id: 1 as never, name: 'n', age }));
    if (ok) expect(err).toBeUndefined();
    else expectRefused(err, 1);
  });

  it('refuses, per document, the invalid ones of an unordered insertMany', async () => {
    const c = await withValidator(person);
    const err = await failure(c.insertMany([{ _id: 1, name: 'a' }, { _id: 2 }, { _id: 3, name: 'c' }] as never[], { ordered: false }));
    expect(err).toBeInstanceOf(MongoBulkWriteError);
    const writeErrors = [(err as MongoBulkWriteError).writeErrors].flat();
    expect(writeErrors.map((e) => [e.index, e.code])).toEqual([[1, 121]]);
    expect(await c.countDocuments()).toBe(2);
  });

  // Each write turns the stored {_id: 1, name: 'Ada'} (or, for upserts, nothing) into an invalid document.
  const writes: Array<{ name: string; write: (c: Collection, bypass: boolean) => Promise<unknown>; id: unknown }> = [
    { name: 'updateOne with $unset', write: (c, bypass) => c.updateOne({ _id: 1 as never }, { $unset: { name: '' } }, { bypassDocumentValidation: bypass }), id: 1 },
    { name: 'updateMany with $set', write: (c, bypass) => c.updateMany({}, { $set: { age: 'old' } }, { bypassDocumentValidation: bypass }), id: 1 },
    { name: 'replaceOne', write: (c, bypass) => c.replaceOne({ _id: 1 as never }, { age: 1 }, { bypassDocumentValidation: bypass }), id: 1 },
    { name: 'an upsert', write: (c, bypass) => c.updateOne({ _id: 2 as never }, { $set: { age: 1 } }, { upsert: true, bypassDocumentValidation: bypass }), id: 2 },
    { name: 'findOneAndUpdate', write: (c, bypass) => c.findOneAndUpdate({ _id: 1 as never }, { $set: { name: '' } }, { bypassDocumentValidation: bypass }), id: 1 },
    {
      name: 'findOneAndUpdate with upsert',
      write: (c, bypass) => c.findOneAndUpdate({ _id: 2 as never }, { $set: { age: 1 } }, { upsert: true, bypassDocumentValidation: bypass }),
      id: 2,
    },
    { name: 'findOneAndReplace', write: (c, bypass) => c.findOneAndReplace({ _id: 1 as never }, { name: 7 }, { bypassDocumentValidation: bypass }), id: 1 },
  ];
  it.each(writes)('$name is refused with 121 and changes nothing', async ({ write, id }) => {
    const c = await withValidator(person);
    await c.insertOne({ _id: 1 as never, name: 'Ada' });
    expectRefused(await failure(write(c, false)), id);
    expect(await c.find().toArray()).toEqual([{ _id: 1, name: 'Ada' }]);
  });

  it.each(writes)('$name goes through with bypassDocumentValidation', async ({ write }) => {
    const c = await withValidator(person);
    await c.insertOne({ _id: 1 as never, name: 'Ada' });
    expect(await failure(write(c, true))).toBeUndefined();
    expect(await c.countDocuments({ $nor: [person] })).toBe(1);
  });

  it('validationLevel moderate lets documents that already failed go on failing, and checks the rest', async () => {
    const c = await withValidator(person, { validationLevel: 'moderate' });
    await c.insertOne({ _id: 1 as never, age: 1 }, { bypassDocumentValidation: true });
    await c.insertOne({ _id: 2 as never, name: 'Ada' });
    expect(await failure(c.updateOne({ _id: 1 as never }, { $set: { age: 2 } }))).toBeUndefined();
    expectRefused(await failure(c.updateOne({ _id: 2 as never }, { $unset: { name: '' } })), 2);
    expectRefused(await failure(c.insertOne({ _id: 3 as never })), 3);
  });

  it("validationLevel 'off' validates nothing", async () => {
    const c = await withValidator(person, { validationLevel: 'off' });
    expect(await failure(c.insertOne({ _id: 1 as never, age: 'x' }))).toBeUndefined();
  });

  it("validationAction 'warn' accepts an invalid document (and logs it)", async () => {
    const c = await withValidator(person, { validationAction: 'warn' });
    expect(await failure(c.insertOne({ _id: 1 as never, age: 'x' }))).toBeUndefined();
    expect(await c.countDocuments()).toBe(1);
  });

  it('a validator of ordinary query operators, alone or beside $jsonSchema', async () => {
    const c = await withValidator({ ...person, status: { $in: ['active', 'closed'] } });
    await c.insertOne({ _id: 1 as never, name: 'a', status: 'active' });
    const err = await failure(c.insertOne({ _id: 2 as never, name: 'b', status: 'lost' }));
    expect(err?.code).toBe(121);
    expect(err?.errInfo?.failingDocumentId).toBe(2);
    const plain = await withValidator({ qty: { $gte: 0 } });
    expect((await failure(plain.insertOne({ _id: 1 as never, qty: -1 })))?.code).toBe(121);
    expect(await failure(plain.insertOne({ _id: 2 as never, qty: 1 }))).toBeUndefined();
  });
});

describe('validators mongod refuses at create', () => {
  const rows: Array<{ name: string; options: Document; code: number; message: string }> = [
    { name: 'an unknown keyword', options: { validator: { $jsonSchema: { bsonType: 'object', x: 1 } } }, code: 9, message: 'Unknown $jsonSchema keyword: x' },
    { name: 'an unknown keyword in a nested schema', options: { validator: { $jsonSchema: { properties: { a: { examples: [1] } } } } }, code: 9, message: 'Unknown $jsonSchema keyword: examples' },
    { name: 'format', options: { validator: { $jsonSchema: { properties: { a: { format: 'email' } } } } }, code: 9, message: "$jsonSchema keyword 'format' is not currently supported" },
    { name: '$ref', options: { validator: { $jsonSchema: { $ref: '#/definitions/a' } } }, code: 9, message: "$jsonSchema keyword '$ref' is not currently supported" },
    { name: 'default', options: { validator: { $jsonSchema: { properties: { a: { default: 1 } } } } }, code: 9, message: "$jsonSchema keyword 'default' is not currently supported" },
    { name: "type 'integer'", options: { validator: { $jsonSchema: { properties: { a: { type: 'integer' } } } } }, code: 9, message: "$jsonSchema type 'integer' is not currently supported." },
    { name: 'an unknown bsonType', options: { validator: { $jsonSchema: { properties: { a: { bsonType: 'integer' } } } } }, code: 2, message: 'Unknown type name alias: integer' },
    { name: 'a required that is not an array', options: { validator: { $jsonSchema: { required: 'a' } } }, code: 14, message: "$jsonSchema keyword 'required' must be an array" },
    { name: 'an unknown query operator', options: { validator: { a: { $bogus: 1 } } }, code: 2, message: 'unknown operator: $bogus' },
    { name: '$where', options: { validator: { $where: 'true' } }, code: 2, message: '$where is not allowed in this context' },
    {
      name: "encrypt under validationAction 'warn'",
      options: { validator: { $jsonSchema: { properties: { ssn: { encrypt: {} } } } }, validationAction: 'warn' },
      code: 224,
      message: 'Encryption-related validator keywords are not allowed in this context',
    },
    { name: 'a validator that is not a document', options: { validator: 1 }, code: 14, message: "BSON field 'create.validator' is the wrong type" },
    { name: 'an unknown validationLevel', options: { validator: person, validationLevel: 'lax' }, code: 2, message: "Enumeration value 'lax' for field 'create.validationLevel' is not a valid value." },
    { name: 'an unknown validationAction', options: { validator: person, validationAction: 'ignore' }, code: 2, message: "Enumeration value 'ignore' for field 'create.validationAction' is not a valid value." },
  ];
  it.each(rows)('$name: $code', async ({ options, code, message }) => {
    const name = testDb.uniqueName('bad');
    const err = await failure(testDb.db.createCollection(name, options));
    expect(err).toBeInstanceOf(MongoServerError);
    expect(err!.code).toBe(code);
    expect(err!.message).toContain(message);
    expect(await testDb.db.listCollections({ name }).toArray()).toEqual([]);
  });
});

describe('the $jsonSchema query operator', () => {
  const docs = [
    { _id: 1, name: 'a', age: 5 },
    { _id: 2, name: 'b', age: Long.fromNumber(5) },
    { _id: 3, age: 7 },
    { _id: 4, name: 'd', age: 'x' },
  ];
  let c: Collection;
  beforeAll(async () => {
    c = testDb.db.collection(testDb.uniqueName('q'));
    await c.insertMany(docs as never[]);
  });

  it('selects in find, count and aggregate', async () => {
    const ids = async (cursor: { toArray(): Promise<Document[]> }): Promise<unknown[]> => (await cursor.toArray()).map((d) => d._id).sort();
    expect(await ids(c.find(person))).toEqual([1]);
    expect(await ids(c.find({ $nor: [person] }))).toEqual([2, 3, 4]);
    expect(await c.countDocuments(person)).toBe(1);
    expect(await ids(c.aggregate([{ $match: person }]))).toEqual([1]);
    // A $match after another stage runs in the pipeline rather than the planner.
    expect(await ids(c.aggregate([{ $addFields: { seen: true } }, { $match: { $jsonSchema: { required: ['seen', 'name'], properties: { age: { bsonType: 'long' } } } } }]))).toEqual([2]);
  });

  it('refuses a malformed schema before reading a document', async () => {
    const err = await failure(testDb.db.collection('missing_collection').find({ $jsonSchema: { bsonType: 'object', nope: 1 } }).toArray());
    expect(err?.code).toBe(9);
    expect(err?.message).toContain('Unknown $jsonSchema keyword: nope');
  });
});

describe('mongoose', () => {
  it('Model.create of an invalid document rejects with DocumentValidationFailure', async () => {
    const name = testDb.uniqueName('m');
    await testDb.db.createCollection(name, { validator: person });
    const conn = await mongoose.createConnection(testDb.uri, { dbName: testDb.dbName }).asPromise();
    try {
      const Person = conn.model('Person', new mongoose.Schema({ name: String, age: Number }, { versionKey: false }), name);
      await Person.create({ name: 'Ada', age: 36 });
      const err = await failure(Person.create({ age: 3 }));
      expect(err?.code).toBe(121);
      expect(await Person.countDocuments()).toBe(1);
    } finally {
      await conn.close();
    }
  });
});
