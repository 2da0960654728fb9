// Hashed indexes: the key of a `hashed` field is mongod's hash of its value (BSONElementHasher::hash64
// with seed 0, src/mongo/db/hasher.cpp: MD5 over the canonical type and value, numbers squashed to a
// 64-bit integer, the first 8 bytes of the digest read as a little-endian NumberLong), so a hinted
// scan comes in mongod's order and `{a: 1}`, `{a: 1.0}` and `{a: NumberLong(1)}` share a key, as
// equality requires. Arrays are refused on every field of such an index, as mongod refuses them
// (ExpressionKeysPrivate::getHashKeys).
import { createHash, type Hash } from 'node:crypto';
import { BSON, Decimal128, Long } from 'bson';
import { bsonText, getField, isPlainObject, type Doc } from './bson-order.js';
import { MongoError } from './errors.js';

/** mongod's canonicalizeBSONType, by BSON type byte. */
const CANONICAL_TYPE: Record<number, number> = {
  ...{ 0x01: 10, 0x10: 10, 0x12: 10, 0x13: 10 }, // double, int, long, decimal: numbers compare as one type
  ...{ 0x02: 15, 0x0e: 15 }, // string, symbol
  ...{ 0x03: 20, 0x04: 25, 0x05: 30, 0x06: 0, 0x07: 35, 0x08: 40, 0x09: 45, 0x0a: 5, 0x0b: 50, 0x0c: 55, 0x0d: 60, 0x0f: 65, 0x11: 47 },
  ...{ 0x7f: 127, 0xff: -1 }, // MaxKey, MinKey
};
const TWO_63 = 2 ** 63;

/** The NumberLong mongod stores in a hashed index for `value` (null for a missing field). */
export function hashKey(value: unknown): Long {
  const hash = createHash('md5');
  hash.update(int32(0)); // the seed
  const bytes = BSON.serialize({ '': value === undefined ? null : value });
  hashElement(hash, bytes, 4, false);
  return Long.fromBigInt(hash.digest().readBigInt64LE(0));
}

function hashElement(hash: Hash, buf: Uint8Array, at: number, withName: boolean): number {
  const type = buf[at];
  const nameEnd = buf.indexOf(0, at + 1);
  hash.update(int32(CANONICAL_TYPE[type] ?? 0));
  if (withName) hash.update(buf.subarray(at + 1, nameEnd + 1));
  const start = nameEnd + 1;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const end = start + valueSize(buf, view, start, type);
  if (type === 0x03 || type === 0x04 || type === 0x0f) {
    let p = start + 4;
    if (type === 0x0f) {
      // Code with scope: the code string (with its NUL), then the scope document's elements.
      const codeLength = view.getInt32(p, true);
      hash.update(buf.subarray(p + 4, p + 4 + codeLength));
      p += 4 + codeLength + 4;
    }
    while (buf[p] !== 0) p = hashElement(hash, buf, p, true);
    hash.update(int32(0)); // the end-of-object element: canonical type 0, no name, no value
  } else if (CANONICAL_TYPE[type] === 10) {
    hash.update(int64(numberForHash(buf, view, start, type)));
  } else {
    hash.update(buf.subarray(start, end));
  }
  return end;
}

/** Bytes of the fixed-size values, by BSON type byte (undefined, null, MinKey and MaxKey have none). */
const FIXED_SIZE: Record<number, number> = { 0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16 };

function valueSize(buf: Uint8Array, view: DataView, at: number, type: number): number {
  switch (type) {
    case 0x02: // string, code, symbol: length-prefixed
    case 0x0d:
    case 0x0e:
      return 4 + view.getInt32(at, true);
    case 0x03: // document, array, code with scope: the length includes itself
    case 0x04:
    case 0x0f:
      return view.getInt32(at, true);
    case 0x05: // binary: length, subtype, bytes
      return 5 + view.getInt32(at, true);
    case 0x0b: {
      // regex: pattern and options, two C strings
      const pattern = buf.indexOf(0, at);
      return buf.indexOf(0, pattern + 1) + 1 - at;
    }
    case 0x0c: // DBPointer: a string and an ObjectId
      return 4 + view.getInt32(at, true) + 12;
    default:
      return FIXED_SIZE[type] ?? 0;
  }
}

/** safeNumberLongForHash: integers as they are, doubles truncated (NaN 0, 2^63 itself -2^63, beyond clamped). */
function numberForHash(buf: Uint8Array, view: DataView, at: number, type: number): bigint {
  if (type === 0x10) return BigInt(view.getInt32(at, true));
  if (type === 0x12) return view.getBigInt64(at, true);
  const d = type === 0x01 ? view.getFloat64(at, true) : Number(new Decimal128(buf.slice(at, at + 16)).toString());
  if (Number.isNaN(d)) return 0n;
  if (d === TWO_63 && type === 0x01) return -(2n ** 63n);
  if (d >= TWO_63) return 2n ** 63n - 1n;
  if (d <= -TWO_63) return -(2n ** 63n);
  return BigInt(Math.trunc(d));
}

function int32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setInt32(0, n, true);
  return out;
}

function int64(n: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, n, true);
  return out;
}

/**
 * The one key of `doc` in a hashed index: each field's value (null when missing), the hashed one
 * hashed; none when sparse and every field is missing. An array anywhere on a field's path is refused
 * (16766), whatever field of the index it is on.
 */
export function hashedIndexKeys(doc: Doc, fields: Array<{ path: string; parts: string[]; hashed: boolean }>, sparse: boolean): any[][] {
  const key: any[] = [];
  let present = false;
  for (const f of fields) {
    const v = valueAlongPath(doc, f.parts);
    if (v !== undefined) present = true;
    key.push(f.hashed ? hashKey(v) : v === undefined ? null : v);
  }
  return sparse && !present ? [] : [key];
}

function valueAlongPath(doc: Doc, parts: string[]): unknown {
  let cur: unknown = doc;
  for (let i = 0; i < parts.length; i++) {
    if (!isPlainObject(cur)) return undefined;
    cur = getField(cur, parts[i]);
    if (Array.isArray(cur)) {
      throw new MongoError(16766, `Error: hashed indexes do not currently support array values. Found array at path: ${parts.slice(0, i + 1).join('.')}`, 'Location16766');
    }
  }
  return cur;
}

/** mongod's refusals of a hashed key pattern (its hash access method's), or undefined. */
export function hashedSpecProblem(key: Doc, unique: boolean): MongoError | undefined {
  const hashed = Object.values(key).filter((d) => d === 'hashed').length;
  if (hashed === 0) return undefined;
  if (unique) return new MongoError(16764, 'Currently hashed indexes cannot guarantee uniqueness. Use a regular index.', 'Location16764');
  if (hashed > 1) {
    return new MongoError(31303, `A maximum of one index field is allowed to be hashed but found ${hashed} for 'key' ${bsonText(key)}`, 'Location31303');
  }
  return undefined;
}
