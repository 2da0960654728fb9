// The filter compiler (src/matcher.ts) called directly: one row per case, each with the result MongoDB
// documents for it. Each table cites its page under https://www.mongodb.com/docs/manual/reference/operator/query/.
import { Binary, Decimal128, Double, Long, MaxKey, MinKey, ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';
import type { Doc } from '../../src/bson-order.js';
import { MongoError } from '../../src/errors.js';
import { compileFilter, positionalIndex } from '../../src/matcher.js';

type Row = { name: string; filter: Doc; doc: Doc; matches: boolean };

function check(rows: Row[]): void {
  it.each(rows)('$name', ({ filter, doc, matches }) => {
    expect(compileFilter(filter)(doc)).toBe(matches);
  });
}

describe('equality', () => {
  // .../query/eq/: an array field matches a value equal to the whole array or to one of its elements;
  // {f: null} matches null and missing fields; numbers compare by value across types.
  check([
    { name: 'scalar equal', filter: { a: 1 }, doc: { a: 1 }, matches: true },
    { name: 'scalar different', filter: { a: 1 }, doc: { a: 2 }, matches: false },
    { name: 'Int32 equals Long and Double of the same value', filter: { a: Long.fromNumber(1) }, doc: { a: new Double(1) }, matches: true },
    { name: 'Decimal128 equals an Int32 of the same value', filter: { a: Decimal128.fromString('2') }, doc: { a: 2 }, matches: true },
    { name: 'number does not equal its string', filter: { a: 1 }, doc: { a: '1' }, matches: false },
    { name: 'array holds the value', filter: { tags: 'b' }, doc: { tags: ['a', 'b'] }, matches: true },
    { name: 'array equals the whole array', filter: { tags: ['a', 'b'] }, doc: { tags: ['a', 'b'] }, matches: true },
    { name: 'array order matters for whole-array equality', filter: { tags: ['b', 'a'] }, doc: { tags: ['a', 'b'] }, matches: false },
    { name: 'nested array element equals an array value', filter: { m: [1, 2] }, doc: { m: [[1, 2], [3]] }, matches: true },
    { name: 'null matches null', filter: { a: null }, doc: { a: null }, matches: true },
    { name: 'null matches a missing field', filter: { a: null }, doc: { b: 1 }, matches: true },
    { name: 'null does not match a value', filter: { a: null }, doc: { a: 0 }, matches: false },
    { name: 'null matches an array holding null', filter: { a: null }, doc: { a: [1, null] }, matches: true },
    { name: 'dotted path into an array of documents', filter: { 'items.sku': 'x' }, doc: { items: [{ sku: 'y' }, { sku: 'x' }] }, matches: true },
    { name: 'dotted path with an array index', filter: { 'items.1.sku': 'x' }, doc: { items: [{ sku: 'y' }, { sku: 'x' }] }, matches: true },
    { name: 'embedded document equality is exact, order included', filter: { d: { x: 1, y: 2 } }, doc: { d: { y: 2, x: 1 } }, matches: false },
    { name: 'ObjectId equality', filter: { o: new ObjectId('64b7f0c2a1b2c3d4e5f60718') }, doc: { o: new ObjectId('64b7f0c2a1b2c3d4e5f60718') }, matches: true },
    { name: 'Date equality', filter: { t: new Date(5) }, doc: { t: new Date(5) }, matches: true },
    { name: '$ne excludes arrays holding the value', filter: { tags: { $ne: 'a' } }, doc: { tags: ['a', 'b'] }, matches: false },
    { name: '$ne matches a missing field', filter: { a: { $ne: 1 } }, doc: {}, matches: true },
  ]);
});

describe('comparisons', () => {
  // .../query/gt/ and .../bson-type-comparison-order/: $gt/$gte/$lt/$lte only match values of the
  // operand's type bracket (all numbers are one bracket); an array matches when an element does.
  check([
    { name: '$gt across Int32 and Double', filter: { a: { $gt: 1 } }, doc: { a: 1.5 }, matches: true },
    { name: '$gt across Long and Int32', filter: { a: { $gt: Long.fromNumber(5) } }, doc: { a: 6 }, matches: true },
    { name: '$lt never matches a string for a number', filter: { a: { $lt: 10 } }, doc: { a: 'abc' }, matches: false },
    { name: '$gt never matches null', filter: { a: { $gt: 0 } }, doc: { a: null }, matches: false },
    { name: '$gte null matches a missing field', filter: { a: { $gte: null } }, doc: {}, matches: true },
    { name: '$lte on strings is binary', filter: { s: { $lte: 'b' } }, doc: { s: 'B' }, matches: true },
    { name: '$gt on dates', filter: { t: { $gt: new Date(1) } }, doc: { t: new Date(2) }, matches: true },
    { name: '$gt on an array matches an element', filter: { a: { $gt: 5 } }, doc: { a: [1, 7] }, matches: true },
    { name: 'range on one element or across elements', filter: { a: { $gt: 5, $lt: 3 } }, doc: { a: [1, 7] }, matches: true },
    { name: 'NaN is not greater than a number', filter: { a: { $gt: 0 } }, doc: { a: Number.NaN }, matches: false },
    { name: 'BinData orders by length first', filter: { b: { $gt: new Binary(Buffer.from([0xff])) } }, doc: { b: new Binary(Buffer.from([0, 0])) }, matches: true },
    { name: 'BinData of one length orders by subtype', filter: { b: { $gt: new Binary(Buffer.from([0xff]), 0) } }, doc: { b: new Binary(Buffer.from([1]), 5) }, matches: true },
    { name: 'BinData of one length and subtype orders by bytes', filter: { b: { $lt: new Binary(Buffer.from([2])) } }, doc: { b: new Binary(Buffer.from([1])) }, matches: true },
  ]);
});

describe('$in, $nin, $exists, $type, $size, $all', () => {
  // .../query/in/, /nin/, /exists/, /type/, /size/, /all/.
  check([
    { name: '$in matches one listed value', filter: { a: { $in: [1, 2] } }, doc: { a: 2 }, matches: true },
    { name: '$in matches an array element', filter: { a: { $in: [5] } }, doc: { a: [4, 5] }, matches: true },
    { name: '$in with null matches a missing field', filter: { a: { $in: [null] } }, doc: {}, matches: true },
    { name: '$in with a regex', filter: { s: { $in: [/^ab/] } }, doc: { s: 'abc' }, matches: true },
    { name: '$nin matches a missing field', filter: { a: { $nin: [1] } }, doc: {}, matches: true },
    { name: '$nin excludes arrays holding a listed value', filter: { a: { $nin: [1] } }, doc: { a: [0, 1] }, matches: false },
    { name: '$exists true on null', filter: { a: { $exists: true } }, doc: { a: null }, matches: true },
    { name: '$exists false on a missing field', filter: { a: { $exists: false } }, doc: {}, matches: true },
    { name: '$exists on a path through an array', filter: { 'a.b': { $exists: true } }, doc: { a: [{ c: 1 }, { b: 2 }] }, matches: true },
    { name: "$type 'long' is only Long", filter: { a: { $type: 'long' } }, doc: { a: 1 }, matches: false },
    { name: "$type 'number' covers Decimal128", filter: { a: { $type: 'number' } }, doc: { a: Decimal128.fromString('1') }, matches: true },
    { name: "$type 'array' on an array", filter: { a: { $type: 'array' } }, doc: { a: [] }, matches: true },
    { name: '$type matches an array element', filter: { a: { $type: 'string' } }, doc: { a: [1, 's'] }, matches: true },
    { name: "$type 'minKey'", filter: { a: { $type: 'minKey' } }, doc: { a: new MinKey() }, matches: true },
    { name: '$size matches the array length', filter: { a: { $size: 2 } }, doc: { a: [1, 2] }, matches: true },
    { name: '$size never matches a non-array', filter: { a: { $size: 1 } }, doc: { a: 'x' }, matches: false },
    { name: '$all on a non-array field equal to the one value', filter: { tags: { $all: ['a'] } }, doc: { tags: 'a' }, matches: true },
    { name: '$all needs every value', filter: { tags: { $all: ['a', 'c'] } }, doc: { tags: ['a', 'b'] }, matches: false },
    { name: '$all in any order', filter: { tags: { $all: ['b', 'a'] } }, doc: { tags: ['a', 'b', 'c'] }, matches: true },
    { name: '$all of a nested array', filter: { tags: { $all: [['a', 'b']] } }, doc: { tags: [['a', 'b'], 'c'] }, matches: true },
    { name: '$all of nothing matches nothing', filter: { tags: { $all: [] } }, doc: { tags: ['a'] }, matches: false },
    {
      name: '$all of $elemMatch conditions',
      filter: { qty: { $all: [{ $elemMatch: { size: 'M', num: { $gt: 50 } } }, { $elemMatch: { num: 100, color: 'green' } }] } },
      doc: { qty: [{ size: 'M', num: 100, color: 'green' }] },
      matches: true,
    },
  ]);
});

describe('$elemMatch', () => {
  // .../query/elemMatch/: one element must satisfy every condition; led by an operator the conditions
  // apply to each element's value, otherwise they are a query on each element document, where $ref,
  // $id and $db name DBRef fields (.../reference/database-references/).
  check([
    { name: 'one element satisfies both bounds', filter: { r: { $elemMatch: { $gte: 80, $lt: 85 } } }, doc: { r: [82, 90] }, matches: true },
    { name: 'no single element satisfies both bounds', filter: { r: { $elemMatch: { $gte: 80, $lt: 85 } } }, doc: { r: [75, 88] }, matches: false },
    { name: 'query on element documents', filter: { r: { $elemMatch: { product: 'xyz', score: { $gte: 8 } } } }, doc: { r: [{ product: 'abc', score: 10 }, { product: 'xyz', score: 9 }] }, matches: true },
    { name: 'conditions split across elements do not match', filter: { r: { $elemMatch: { product: 'xyz', score: { $gte: 8 } } } }, doc: { r: [{ product: 'abc', score: 10 }, { product: 'xyz', score: 5 }] }, matches: false },
    { name: 'never matches a non-array', filter: { r: { $elemMatch: { $gt: 1 } } }, doc: { r: 5 }, matches: false },
    { name: '$or inside an element query', filter: { r: { $elemMatch: { $or: [{ a: 1 }, { b: 2 }] } } }, doc: { r: [{ b: 2 }] }, matches: true },
    { name: 'DBRef $id in an element query', filter: { refs: { $elemMatch: { $id: 6 } } }, doc: { refs: [{ $ref: 'c', $id: 5 }, { $ref: 'c', $id: 6 }] }, matches: true },
    { name: 'DBRef $ref and $id together', filter: { refs: { $elemMatch: { $ref: 'c', $id: 7 } } }, doc: { refs: [{ $ref: 'c', $id: 6 }, { $ref: 'd', $id: 7 }] }, matches: false },
    { name: 'DBRef fields by dotted path', filter: { 'refs.$id': 5 }, doc: { refs: [{ $ref: 'c', $id: 5 }] }, matches: true },
    { name: 'a DBRef document is a value, not operators', filter: { ref: { $ref: 'c', $id: 5 } }, doc: { ref: { $ref: 'c', $id: 5 } }, matches: true },
  ]);
});

describe('$not, $and, $or, $nor, $regex', () => {
  // .../query/not/, /and/, /or/, /nor/, /regex/.
  check([
    { name: '$not matches a missing field', filter: { a: { $not: { $gt: 5 } } }, doc: {}, matches: true },
    { name: '$not of a matching condition', filter: { a: { $not: { $gt: 5 } } }, doc: { a: 6 }, matches: false },
    { name: '$not of a regex', filter: { s: { $not: /^a/ } }, doc: { s: 'bc' }, matches: true },
    { name: '$and of two conditions', filter: { $and: [{ a: 1 }, { b: 2 }] }, doc: { a: 1, b: 2 }, matches: true },
    { name: '$or of two conditions, one true', filter: { $or: [{ a: 1 }, { b: 2 }] }, doc: { b: 2 }, matches: true },
    { name: '$nor of two conditions, one true', filter: { $nor: [{ a: 1 }, { b: 2 }] }, doc: { b: 2 }, matches: false },
    { name: '$nor matches when a field is missing', filter: { $nor: [{ a: 1 }] }, doc: {}, matches: true },
    { name: 'regex literal', filter: { s: /b+/ }, doc: { s: 'abbc' }, matches: true },
    { name: '$regex with $options i', filter: { s: { $regex: '^AB', $options: 'i' } }, doc: { s: 'abc' }, matches: true },
    { name: 'regex matches an array element', filter: { s: /^x/ }, doc: { s: ['a', 'xy'] }, matches: true },
    { name: 'regex never matches a number', filter: { s: /1/ }, doc: { s: 1 }, matches: false },
  ]);
});

describe('bitwise operators', () => {
  // .../query/bitsAllSet/ (and bitsAnySet, bitsAllClear, bitsAnyClear): numbers are tested as 64-bit
  // two's complement integers (negatives sign-extended), BinData bit by bit from its first byte's
  // lowest bit; a fractional number or any other type never matches. The documentation's collection:
  // 54 = 0b00110110, 20 = 0b00010100, BinData(0, "Zg==") = 0b01100110.
  const docs: Record<string, Doc> = { 54: { a: 54 }, 20: { a: 20 }, '20.0': { a: new Double(20) }, Zg: { a: new Binary(Buffer.from('Zg==', 'base64')) } };
  const rows: Array<{ filter: Doc; ids: string[] }> = [
    { filter: { a: { $bitsAllSet: [1, 5] } }, ids: ['54', 'Zg'] },
    { filter: { a: { $bitsAllSet: 50 } }, ids: ['54'] },
    { filter: { a: { $bitsAllSet: new Binary(Buffer.from('MC==', 'base64')) } }, ids: ['54'] },
    { filter: { a: { $bitsAnySet: [1, 5] } }, ids: ['54', 'Zg'] },
    { filter: { a: { $bitsAnySet: 35 } }, ids: ['54', 'Zg'] },
    { filter: { a: { $bitsAllClear: [1, 5] } }, ids: ['20', '20.0'] },
    { filter: { a: { $bitsAllClear: 35 } }, ids: ['20', '20.0'] },
    { filter: { a: { $bitsAnyClear: [1, 5] } }, ids: ['20', '20.0'] },
    { filter: { a: { $bitsAnyClear: new Binary(Buffer.from('MC==', 'base64')) } }, ids: ['20', '20.0', 'Zg'] },
  ];
  it.each(rows)('%o', ({ filter, ids }) => {
    const pred = compileFilter(filter);
    expect(Object.keys(docs).filter((id) => pred(docs[id]))).toEqual(ids);
  });
  check([
    { name: 'a negative number has every high bit set', filter: { a: { $bitsAllSet: [63, 100] } }, doc: { a: -5 }, matches: true },
    { name: 'a Long is tested on its 64 bits', filter: { a: { $bitsAllSet: [40] } }, doc: { a: Long.fromString('1099511627776') }, matches: true },
    { name: 'a fractional number never matches', filter: { a: { $bitsAllClear: [0] } }, doc: { a: 2.5 }, matches: false },
    { name: 'a string never matches', filter: { a: { $bitsAllClear: [0] } }, doc: { a: 'x' }, matches: false },
    { name: 'bits past the end of BinData are clear', filter: { a: { $bitsAllClear: [8, 9] } }, doc: { a: new Binary(Buffer.from([0xff])) }, matches: true },
  ]);
});

describe('__proto__ and inherited names are ordinary fields', () => {
  // A field name is only a name (https://www.mongodb.com/docs/manual/core/document/#field-names):
  // nothing inherited from JavaScript's Object.prototype is a field.
  const withProto = JSON.parse('{"__proto__": {"x": 1}}') as Doc;
  check([
    { name: '__proto__.x reads the stored field', filter: { '__proto__.x': 1 }, doc: withProto, matches: true },
    { name: '__proto__ is missing when not stored', filter: JSON.parse('{"__proto__": {"$exists": true}}') as Doc, doc: {}, matches: false },
    { name: 'constructor is missing when not stored', filter: { constructor: { $exists: true } }, doc: { a: 1 }, matches: false },
    { name: 'toString is missing when not stored', filter: { toString: null }, doc: {}, matches: true },
  ]);
});

describe('refusals, before any document is read', () => {
  // The error mongod gives for each. $near/$nearSphere need a geospatial index and $text a text index,
  // which this server never has (.../query/near/, .../query/text/); $where, $function and $accumulator
  // need the JavaScript engine it does not run (as a mongod with security.javascriptEnabled: false);
  // the geospatial operators it does not implement get mongod's answer for an unknown operator.
  const rows: Array<{ filter: Doc; code: number; message: string }> = [
    { filter: { loc: { $near: [0, 0] } }, code: 291, message: 'unable to find index for $geoNear query' },
    { filter: { loc: { $nearSphere: { $geometry: { type: 'Point', coordinates: [0, 0] } }, $maxDistance: 5 } }, code: 291, message: 'unable to find index for $geoNear query' },
    { filter: { $or: [{ a: 1 }, { loc: { $near: [0, 0] } }] }, code: 291, message: 'unable to find index for $geoNear query' },
    { filter: { loc: { $geoWithin: { $box: [[0, 0], [1, 1]] } } }, code: 2, message: 'unknown operator: $geoWithin' },
    { filter: { loc: { $geoIntersects: { $geometry: { type: 'Point', coordinates: [0, 0] } } } }, code: 2, message: 'unknown operator: $geoIntersects' },
    { filter: { loc: { $within: { $center: [[0, 0], 1] } } }, code: 2, message: 'unknown operator: $within' },
    { filter: { $text: { $search: 'coffee' } }, code: 27, message: 'text index required for $text query' },
    { filter: { $where: 'this.a == 1' }, code: 6108304, message: 'no globalScriptEngine in $where parsing' },
    { filter: { $and: [{ $where: 'true' }] }, code: 6108304, message: 'no globalScriptEngine in $where parsing' },
    { filter: { $expr: { $function: { body: 'function() { return true }', args: [], lang: 'js' } } }, code: 31264, message: 'Cannot run server-side javascript' },
    { filter: { a: { $bitsAllSet: 'x' } }, code: 2, message: 'a takes an Array, a number, or a BinData but received: $bitsAllSet: x' },
    { filter: { a: { $bitsAllSet: -1 } }, code: 9, message: 'Expected a non-negative number in: $bitsAllSet: -1' },
    { filter: { a: { $all: 1 } }, code: 2, message: '$all needs an array' },
    { filter: { a: { $elemMatch: 1 } }, code: 2, message: '$elemMatch needs an Object' },
    { filter: { $or: [] }, code: 2, message: '$and/$or/$nor must be a nonempty array' },
    { filter: { a: { $gt: 1, b: 1 } }, code: 2, message: 'unknown operator: b' },
  ];
  it.each(rows)('$filter', ({ filter, code, message }) => {
    let caught: unknown;
    try {
      compileFilter(filter);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(MongoError);
    expect((caught as MongoError).code).toBe(code);
    expect((caught as MongoError).message).toContain(message);
  });
});

describe('positionalIndex', () => {
  // .../update/positional/ and .../projection/positional/: `$` stands for the first element the query's
  // conditions on that array match.
  const doc = { grades: [{ s: 70 }, { s: 85 }, { s: 90 }], n: [3, 8, 9], other: new MaxKey() };
  const rows: Array<{ path: string; filter: Doc; index: number }> = [
    { path: 'n', filter: { n: { $gt: 5 } }, index: 1 },
    { path: 'grades', filter: { 'grades.s': { $gte: 90 } }, index: 2 },
    { path: 'grades', filter: { grades: { $elemMatch: { s: { $gt: 80 } } } }, index: 1 },
    { path: 'grades', filter: { $and: [{ 'grades.s': 70 }] }, index: 0 },
    { path: 'n', filter: { other: 1 }, index: -1 },
    { path: 'n', filter: { n: 100 }, index: -1 },
  ];
  it.each(rows)('$path with $filter', ({ path, filter, index }) => {
    expect(positionalIndex(doc, path, filter)).toBe(index);
  });
});
