// BSON ordering (src/bson-order.ts) called directly, against the documented comparison order
// (https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/): MinKey < null < numbers <
// strings (and symbols) < objects < arrays < BinData < ObjectId < booleans < Dates < Timestamps <
// regular expressions < MaxKey; numbers of every type compare by value.
import { Binary, BSON, BSONRegExp, DBRef, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp } from 'bson';
import { describe, expect, it } from 'vitest';
import { canonicalKey, compareValues, decodeBson, deepCopy, type Doc } from '../../src/bson-order.js';

describe('compareValues across types', () => {
  const ascending: Array<[string, unknown]> = [
    ['MinKey', new MinKey()],
    ['null', null],
    ['number', 5],
    ['string', 'a'],
    ['object', { a: 1 }],
    ['array', [1]],
    ['BinData', new Binary(Buffer.from([1]))],
    ['ObjectId', new ObjectId('64b7f0c2a1b2c3d4e5f60718')],
    ['boolean', false],
    ['Date', new Date(0)],
    ['Timestamp', new Timestamp({ t: 1, i: 1 })],
    ['regular expression', /a/],
    ['MaxKey', new MaxKey()],
  ];
  const pairs = ascending.flatMap(([lowName, low], i) => ascending.slice(i + 1).map(([highName, high]) => ({ lowName, low, highName, high })));
  it.each(pairs)('$lowName < $highName', ({ low, high }) => {
    expect(compareValues(low, high)).toBe(-1);
    expect(compareValues(high, low)).toBe(1);
  });

  it('a missing value (undefined) sorts with null', () => {
    expect(compareValues(undefined, null)).toBe(0);
  });
});

describe('compareValues within a type', () => {
  const rows: Array<{ name: string; a: unknown; b: unknown; result: -1 | 0 | 1 }> = [
    { name: 'Int32 and Double of one value', a: 1, b: new Double(1), result: 0 },
    { name: 'Int32 and Long of one value', a: new Int32(7), b: Long.fromNumber(7), result: 0 },
    { name: 'Long and Decimal128 of one value', a: Long.fromNumber(3), b: Decimal128.fromString('3.0'), result: 0 },
    { name: 'Double below Long', a: 2.5, b: Long.fromNumber(3), result: -1 },
    { name: 'Longs beyond 2^53 compare exactly', a: Long.fromString('9007199254740993'), b: Long.fromString('9007199254740992'), result: 1 },
    { name: 'a Long beyond 2^53 against an integral double', a: Long.fromString('9007199254740993'), b: 9007199254740992, result: 1 },
    { name: 'NaN below every number', a: Number.NaN, b: -Infinity, result: -1 },
    { name: 'NaN equals NaN', a: Number.NaN, b: Decimal128.fromString('NaN'), result: 0 },
    { name: 'strings by bytes: uppercase first', a: 'B', b: 'a', result: -1 },
    { name: 'a string prefix first', a: 'ab', b: 'abc', result: -1 },
    { name: 'objects field by field: key names', a: { a: 1 }, b: { b: 1 }, result: -1 },
    { name: 'objects field by field: value types before names', a: { b: 1 }, b: { a: 'x' }, result: -1 },
    { name: 'objects field by field: values', a: { a: 1 }, b: { a: 2 }, result: -1 },
    { name: 'a shorter object first', a: { a: 1 }, b: { a: 1, b: 1 }, result: -1 },
    { name: 'arrays element by element', a: [1, 2], b: [1, 3], result: -1 },
    { name: 'a shorter array first', a: [1], b: [1, 0], result: -1 },
    { name: 'BinData: a shorter one first, whatever its bytes', a: new Binary(Buffer.from([0xff])), b: new Binary(Buffer.from([0, 0])), result: -1 },
    { name: 'BinData of one length: by subtype', a: new Binary(Buffer.from([9]), 0), b: new Binary(Buffer.from([1]), 4), result: -1 },
    { name: 'BinData of one length and subtype: by bytes', a: new Binary(Buffer.from([1, 2])), b: new Binary(Buffer.from([1, 3])), result: -1 },
    { name: 'ObjectIds by bytes', a: new ObjectId('000000000000000000000001'), b: new ObjectId('000000000000000000000002'), result: -1 },
    { name: 'false before true', a: false, b: true, result: -1 },
    { name: 'Dates by time', a: new Date(1), b: new Date(2), result: -1 },
    { name: 'Timestamps by seconds, then increment', a: new Timestamp({ t: 1, i: 9 }), b: new Timestamp({ t: 2, i: 1 }), result: -1 },
    { name: 'a regex and a BSONRegExp of one pattern', a: /x/, b: new BSONRegExp('x'), result: 0 },
    { name: 'MinKey equals MinKey', a: new MinKey(), b: new MinKey(), result: 0 },
  ];
  it.each(rows)('$name', ({ a, b, result }) => {
    expect(compareValues(a, b)).toBe(result);
    expect(compareValues(b, a)).toBe(-result || 0);
  });
});

describe('canonicalKey', () => {
  // Equal BSON values (the unique index and $addToSet rule) share one key.
  it.each([
    { name: 'numbers of every type', a: 1, b: Long.fromNumber(1) },
    { name: 'Double and Int32', a: new Double(2), b: 2 },
    { name: 'BinData with spare buffer capacity', a: new Binary(Buffer.from([1, 2])), b: (() => {
      const grown = new Binary();
      grown.write(Buffer.from([1, 2]), 0);
      return grown;
    })() },
  ])('$name', ({ a, b }) => {
    expect(canonicalKey(a)).toBe(canonicalKey(b));
  });
});

describe('decodeBson', () => {
  it('keeps a DBRef as the document it is stored as, fields in order', () => {
    const doc = decodeBson(BSON.serialize({ r: new DBRef('c', new ObjectId('64b7f0c2a1b2c3d4e5f60718'), 'd', { extra: 1 }) }));
    expect(Object.keys(doc.r)).toEqual(['$ref', '$id', '$db', 'extra']);
    expect(doc.r.$id).toEqual(new ObjectId('64b7f0c2a1b2c3d4e5f60718'));
    // Written back, it is the same bytes, so the driver reads a DBRef again.
    expect(BSON.deserialize(BSON.serialize(doc)).r).toBeInstanceOf(DBRef);
  });

  it('keeps the number type of a DBRef $id', () => {
    const doc = decodeBson(BSON.serialize({ r: new DBRef('c', Long.fromNumber(5) as never) }));
    expect(doc.r.$id).toEqual(Long.fromNumber(5));
  });

  it('stores a __proto__ key as an ordinary field', () => {
    const doc = decodeBson(BSON.serialize(JSON.parse('{"__proto__": {"x": 1}, "a": 1}')));
    expect(Object.getPrototypeOf(doc)).toBe(Object.prototype);
    expect(Object.keys(doc)).toEqual(['__proto__', 'a']);
  });
});

describe('deepCopy', () => {
  it('copies a __proto__ field as a field, not a prototype', () => {
    const copy = deepCopy(JSON.parse('{"a": {"__proto__": {"polluted": 1}}}') as Doc);
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype);
    expect(Object.keys(copy.a)).toEqual(['__proto__']);
    expect(({} as Doc).polluted).toBeUndefined();
  });

  it('copies containers and shares immutable BSON values', () => {
    const id = new ObjectId();
    const original = { a: [{ b: 1 }], id, when: new Date(3) };
    const copy = deepCopy(original);
    expect(copy).toEqual(original);
    expect(copy.a).not.toBe(original.a);
    expect(copy.a[0]).not.toBe(original.a[0]);
    expect(copy.id).toBe(id);
    expect(copy.when).not.toBe(original.when);
  });
});
