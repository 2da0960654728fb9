// BSON sizes (src/bson-size.ts) against bson's calculateObjectSize, which they must equal for every
// document: the types counted directly and those handed to bson, with and without ignoreUndefined.
import { Binary, BSON, BSONRegExp, BSONSymbol, Code, DBRef, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp, UUID } from 'bson';
import { describe, expect, it } from 'vitest';
import { bsonSize } from '../../src/bson-size.js';
import type { Doc } from '../../src/bson-order.js';

const nested = (depth: number): Doc => (depth === 0 ? { leaf: 1 } : { n: nested(depth - 1) });

describe('bsonSize', () => {
  const id = new ObjectId('64b7f0c2a1b2c3d4e5f60718');
  const rows: Array<[string, Doc]> = [
    ['an account as the gateway stores it', { _id: id, name: 'bench', credits: 999, ops: [], createdAt: new Date(0), updatedAt: new Date(), usage: { '20261125_definitions_0123456789abcdef01234567': { calls: 5, credits: 5 } }, usageOldestDay: new Date() }],
    ['numbers of every width and edge', { i: 1, n: -2147483648, x: 2147483647, over: 2147483648, d: 1.5, z: 0, nz: -0, big: 2 ** 60, nan: NaN, inf: Infinity, l: Long.fromNumber(5), dbl: new Double(3), i32: new Int32(7), dec: Decimal128.fromString('1.5'), bi: 5n }],
    ['strings and names, ASCII and not', JSON.parse('{"": "", "a": "é", "日本": "語", "__proto__": {"x": "😀"}, "k": "' + 'x'.repeat(500) + '"}')],
    ['arrays, long and nested, with undefined and holes', { a: Array.from({ length: 120 }, (_, i) => i), n: [[1, [2, [undefined, null]]], { b: [] }], u: [undefined] }],
    ['undefined fields', { a: undefined, b: { c: undefined, d: 1 } }],
    ['dates, timestamps, booleans, null, min/max', { d: new Date(-1), t: new Timestamp({ t: 1, i: 2 }), y: true, f: false, z: null, min: new MinKey(), max: new MaxKey() }],
    ['binaries', { b0: new Binary(Buffer.from([1, 2, 3])), u: new UUID(), b2: new Binary(Buffer.from([9, 9]), 2), buf: Buffer.from([1, 2]), u8: new Uint8Array(3) }],
    ['types bson counts (regex, code, symbol, DBRef, Map)', { r: /a.b/gim, br: new BSONRegExp('x', 'm'), c: new Code('f()'), cs: new Code('g()', { a: 1 }), s: new BSONSymbol('sym'), ref: new DBRef('c', id, 'd'), m: new Map([['k', 1]]) }],
    ['a class instance and a null-prototype object', { inst: new (class { a = 1; })(), bare: Object.assign(Object.create(null), { a: 1 }) }],
    ['skipped values: a function, a symbol', { f: () => 1, s: Symbol('x'), a: 1 }],
    ['nesting deeper than counted directly', nested(150)],
  ];
  it.each(rows)('%s', (_, doc) => {
    for (const ignoreUndefined of [false, true]) expect(bsonSize(doc, ignoreUndefined)).toBe(BSON.calculateObjectSize(doc, { ignoreUndefined }));
  });
});
