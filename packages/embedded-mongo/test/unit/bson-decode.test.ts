// The request decoder (src/bson-decode.ts) against decodeBson, which it must equal exactly: same
// values, same classes, same field order, for the types it reads itself and for those it hands back
// to bson; malformed bytes fail with bson's own error.
import { Binary, BSON, BSONRegExp, BSONSymbol, Code, DBRef, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp, UUID } from 'bson';
import { describe, expect, it } from 'vitest';
import { decodeDocument } from '../../src/bson-decode.js';
import { decodeBson, type Doc } from '../../src/bson-order.js';

const bytes = (doc: Doc): Buffer => Buffer.from(BSON.serialize(doc));
const viaBson = (b: Buffer): Doc => decodeBson(b, { validation: { utf8: false } });

/** Deep equality that also tells classes apart (Double from number, UUID from Binary) and field order. */
function same(a: unknown, b: unknown): void {
  expect(a).toStrictEqual(b);
  if (a !== null && typeof a === 'object') {
    expect(Object.getPrototypeOf(a)).toBe(Object.getPrototypeOf(b));
    expect(Object.keys(a)).toEqual(Object.keys(b as object));
    for (const k of Object.keys(a)) same((a as Doc)[k], (b as Doc)[k]);
  }
}

describe('decodeDocument', () => {
  const id = new ObjectId('64b7f0c2a1b2c3d4e5f60718');
  const rows: Array<[string, Doc]> = [
    [
      'a findAndModify as the driver sends it',
      {
        findAndModify: 'accounts',
        query: { _id: id, credits: { $gte: 1 } },
        new: true,
        remove: false,
        upsert: false,
        fields: { credits: 1, lowCreditsThreshold: 1 },
        update: { $inc: { credits: -1, 'usage.20261125_definitions_0123456789abcdef01234567.calls': 1 }, $set: { updatedAt: new Date(1764000000123) }, $min: { day: new Date(0) } },
        lsid: { id: new UUID('0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9') },
        $db: 'bench',
      },
    ],
    ['numbers of every width and edge', { i: 1, n: -2147483648, x: 2147483647, d: 1.5, di: new Double(3), dz: new Double(-0), big: 2 ** 40, nan: NaN, inf: -Infinity, l: Long.fromString('9007199254740993'), i32: new Int32(7) }],
    ['strings: empty, long, non-ASCII, short non-ASCII', { e: '', long: 'x'.repeat(300), u: 'héllo wörld, 日本語', s: 'é', emoji: '😀' }],
    ['names: long, non-ASCII, dotted, numeric, __proto__', JSON.parse('{"a.b.c": 1, "日本": 2, "10": 3, "2": 4, "__proto__": {"x": 1}, "' + 'k'.repeat(40) + '": 5}')],
    ['nested documents and arrays', { a: [1, [2, [3, {}]], { b: [] }], o: { p: { q: { r: null } } }, empty: {} }],
    ['dates, timestamps, booleans, null', { d: new Date(-1), early: new Date(-8640000000000000), t: new Timestamp({ t: 4294967295, i: 4294967295 }), y: true, f: false, z: null }],
    ['binaries', { b0: new Binary(Buffer.from([1, 2, 3])), b4: new Binary(Buffer.alloc(16, 7), 4), bad4: new Binary(Buffer.alloc(3), 4), b5: new Binary(Buffer.alloc(16), 5), b2: new Binary(Buffer.from([9]), 2) }],
    ['types bson decodes (regex, decimal, code, symbol, min/max key, undefined)', { r: /a.b/i, br: new BSONRegExp('x', 'm'), dec: Decimal128.fromString('1.5'), c: new Code('f()'), s: new BSONSymbol('sym'), min: new MinKey(), max: new MaxKey(), u: undefined }],
    ['a DBRef, and a document merely like one', { ref: new DBRef('c', id, 'd', { extra: 1 }), like: { $ref: 'c', other: 1 }, ids: { $id: 1 } }],
    ['a DBRef whose fields come in another order (bson puts $ref first)', { ref: { extra: 1, $db: 'd', $id: 5, $ref: 'c' } }],
  ];
  it.each(rows)('%s', (_, doc) => {
    const b = bytes(doc);
    same(decodeDocument(b), viaBson(b));
  });

  it('reads a document inside a larger buffer (a message section)', () => {
    const inner = bytes({ a: 1, s: 'x', o: { id } });
    const framed = Buffer.concat([Buffer.from([9, 9, 9]), inner, Buffer.from([9])]);
    same(decodeDocument(framed.subarray(3, 3 + inner.length)), viaBson(inner));
  });

  it('fails on malformed bytes exactly as bson does', () => {
    const good = bytes({ a: 'text', o: { b: 1 } });
    const cases: Buffer[] = [];
    for (let cut = 1; cut < good.length; cut++) {
      const truncated = Buffer.from(good.subarray(0, cut));
      if (cut >= 4) truncated.writeInt32LE(cut, 0);
      cases.push(truncated);
    }
    const badString = Buffer.from(good);
    badString.writeInt32LE(1000, 7); // the string's length
    cases.push(badString);
    const badBool = bytes({ y: true });
    badBool[badBool.length - 2] = 2;
    cases.push(badBool);
    const unknownType = Buffer.from(good);
    unknownType[4] = 0x7e;
    cases.push(unknownType);
    for (const b of cases) {
      let ours: unknown;
      let theirs: unknown;
      try {
        ours = decodeDocument(b);
      } catch (e) {
        ours = (e as Error).message;
      }
      try {
        theirs = viaBson(b);
      } catch (e) {
        theirs = (e as Error).message;
      }
      expect(ours).toStrictEqual(theirs);
    }
  });
});
