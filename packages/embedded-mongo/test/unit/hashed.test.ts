// Hashed index keys (src/hashed.ts): the hash of each value is the one mongod computes, checked against
// the values mongod's own hasher test pins (src/mongo/db/hasher_test.cpp, "determined experimentally"
// and unchanged across server versions), and arrays are refused on every field of a hashed index as
// mongod refuses them (jstests/core/index/hashed/hashed_index_with_arrays.js).
import { Binary, BSONRegExp, Code, Double, Long, MaxKey, MinKey, ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';
import type { Doc } from '../../src/bson-order.js';
import { MongoError } from '../../src/errors.js';
import { hashedIndexKeys, hashKey } from '../../src/hashed.js';

describe('hashKey is mongod hash64 with seed 0', () => {
  const bytes = new Uint8Array([0, 1, 2, 3, 4, 6]);
  const rows: Array<{ name: string; value: unknown; hash: string }> = [
    { name: 'int 42', value: 42, hash: '-944302157085130861' },
    { name: 'double 42.123 (truncated)', value: 42.123, hash: '-944302157085130861' },
    { name: 'long 42', value: Long.fromNumber(42), hash: '-944302157085130861' },
    { name: 'double 42.0', value: new Double(42), hash: '-944302157085130861' },
    { name: '0', value: 0, hash: '4854801880128277513' },
    { name: 'NaN (as zero)', value: NaN, hash: '4854801880128277513' },
    { name: '1.987', value: 1.987, hash: '5902408780260971510' },
    { name: '-1.789', value: -1.789, hash: '1140205862565771219' },
    { name: 'int32 min', value: -(2 ** 31), hash: '6165898260261354870' },
    { name: 'int32 max', value: 2 ** 31 - 1, hash: '1143184177162245883' },
    { name: 'the largest double (clamped)', value: Number.MAX_VALUE, hash: '921523596458303250' },
    { name: 'long max', value: Long.MAX_VALUE, hash: '921523596458303250' },
    { name: 'the smallest double (clamped)', value: -Number.MAX_VALUE, hash: '4532067210535695462' },
    { name: 'long min', value: Long.MIN_VALUE, hash: '4532067210535695462' },
    { name: 'MinKey', value: new MinKey(), hash: '7961148599568647290' },
    { name: 'MaxKey', value: new MaxKey(), hash: '5504842513779440750' },
    { name: 'null (and a missing field)', value: null, hash: '2338878944348059895' },
    { name: 'a string', value: 'abc', hash: '8478485326885698097' },
    { name: 'an empty string', value: '', hash: '2049396243249673340' },
    { name: 'a document', value: { a: 'abc', b: Long.fromNumber(123) }, hash: '4771603801758380216' },
    { name: 'an empty document', value: {}, hash: '7980500913326740417' },
    { name: 'an array', value: ['bar', 'baz', 'qux'], hash: '-2938911267422831539' },
    { name: 'an empty array', value: [], hash: '8849948234993459283' },
    { name: 'binary', value: new Binary(bytes, 0), hash: '7252465090394235301' },
    { name: 'binary of a custom subtype', value: new Binary(bytes, 128), hash: '5736670452907618262' },
    { name: 'a UUID', value: new Binary(new Uint8Array([...Array(16).keys()]), 4), hash: '6084661258071355978' },
    { name: 'an ObjectId', value: new ObjectId('010203040506070809101112'), hash: '-5588663249627035708' },
    { name: 'a zero ObjectId', value: new ObjectId('000000000000000000000000'), hash: '-4293118519463489418' },
    { name: 'true', value: true, hash: '6405873908747105701' },
    { name: 'false', value: false, hash: '6289544573401934092' },
    { name: 'the epoch', value: new Date(0), hash: '-1178696894582842035' },
    { name: 'a regex', value: new BSONRegExp('mongodb'), hash: '-7275792090268217043' },
    { name: 'a regex with options', value: new BSONRegExp('.*', 'i'), hash: '7095855029187981886' },
    { name: 'code', value: new Code('func f() { return 1; }'), hash: '6861638109178014270' },
    { name: 'code with scope', value: new Code('func f() { return 1; }', { c: true }), hash: '501342939894575968' },
  ];
  it.each(rows)('$name', ({ value, hash }) => {
    expect(hashKey(value).toString()).toBe(hash);
  });
});

describe('hashedIndexKeys', () => {
  const fields = (key: Doc) => Object.entries(key).map(([path, d]) => ({ path, parts: path.split('.'), hashed: d === 'hashed' }));

  it('hashes the hashed field and keeps the others', () => {
    const [key] = hashedIndexKeys({ a: 42, b: 'x' }, fields({ a: 'hashed', b: 1 }), false);
    expect(key[0].toString()).toBe('-944302157085130861');
    expect(key[1]).toBe('x');
  });

  it('a missing field hashes as null; a sparse index leaves out a document missing every field', () => {
    expect(hashedIndexKeys({}, fields({ a: 'hashed' }), false)[0][0].toString()).toBe('2338878944348059895');
    expect(hashedIndexKeys({}, fields({ a: 'hashed', b: 1 }), true)).toEqual([]);
    expect(hashedIndexKeys({ b: null }, fields({ a: 'hashed', b: 1 }), true)).toHaveLength(1);
  });

  const refused: Array<{ name: string; doc: Doc; key: Doc; path: string }> = [
    { name: 'an array in the hashed field', doc: { a: [1] }, key: { a: 'hashed' }, path: 'a' },
    { name: 'an empty array', doc: { a: [] }, key: { a: 'hashed' }, path: 'a' },
    { name: 'an array in another field of the index', doc: { c: [] }, key: { a: 1, b: 'hashed', c: 1 }, path: 'c' },
    { name: 'an array along the path', doc: { field1: { field2: [] } }, key: { 'field1.field2.0.field4': 'hashed' }, path: 'field1.field2' },
    { name: 'an array of documents along the path', doc: { field1: [{ field2: {} }] }, key: { 'field1.field2': 'hashed' }, path: 'field1' },
  ];
  it.each(refused)('refuses $name (16766)', ({ doc, key, path }) => {
    let caught: unknown;
    try {
      hashedIndexKeys(doc, fields(key), false);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(MongoError);
    expect((caught as MongoError).code).toBe(16766);
    expect((caught as MongoError).message).toBe(`Error: hashed indexes do not currently support array values. Found array at path: ${path}`);
  });

  it('an array beside the path is fine', () => {
    expect(hashedIndexKeys({ field1: { field2: { 0: { otherField: [] } } } }, fields({ 'field1.field2.0.field4': 'hashed' }), false)).toHaveLength(1);
  });
});
