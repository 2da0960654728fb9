// BSON comparison order (https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/),
// used by indexes, sorts and the fast-path matcher. Numbers of every width compare by value.
import { BSON, Double, Long, type DBRef, type DeserializeOptions, type ObjectId } from 'bson';

export type Doc = Record<string, any>;

/** Rank of the type bracket a value belongs to; values only compare by content inside one bracket. */
export function typeRank(v: unknown): number {
  if (v === null || v === undefined) return 2;
  switch (typeof v) {
    case 'number':
    case 'bigint':
      return 3;
    case 'string':
      return 4;
    case 'boolean':
      return 9;
    case 'object':
      break;
    default:
      return 5;
  }
  if (v instanceof Date) return 10;
  if (Array.isArray(v)) return 6;
  if (v instanceof RegExp) return 12;
  const t = (v as { _bsontype?: string })._bsontype;
  switch (t) {
    case undefined:
      return 5;
    case 'ObjectId':
      return 8;
    case 'Long':
    case 'Int32':
    case 'Double':
    case 'Decimal128':
      return 3;
    case 'Binary':
      return 7;
    case 'Timestamp':
      return 11;
    case 'BSONRegExp':
      return 12;
    case 'MinKey':
      return 1;
    case 'MaxKey':
      return 13;
    case 'BSONSymbol':
      return 4;
    default:
      return 5;
  }
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

export function isInt32(n: number): boolean {
  return Number.isInteger(n) && n >= INT32_MIN && n <= INT32_MAX;
}

/**
 * Decodes a BSON document keeping every number's type as stored: an Int32 becomes a JS number, a Long
 * stays a Long (bson would make it a number, written back as Int32), and a Double becomes a JS number
 * unless its value is integral within the Int32 range, which bson would write back as Int32: such a
 * Double stays a Double. A DBRef stays the document it is on the wire ({$ref, $id, $db, ...}), so
 * queries reach its fields by name as on mongod (`refs.$id`, `{$elemMatch: {$id: x}}`).
 */
export function decodeBson(bytes: Uint8Array, options: DeserializeOptions = {}): Doc {
  return restoreNumbers(BSON.deserialize(bytes, { ...options, promoteValues: false }));
}

function restoreNumbers(v: any): any {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = restoreNumbers(v[i]);
    return v;
  }
  switch (v._bsontype) {
    case undefined:
      if (v instanceof Date || v instanceof RegExp || ArrayBuffer.isView(v)) return v;
      for (const k of Object.keys(v)) v[k] = restoreNumbers(v[k]);
      return v;
    case 'Int32':
      return v.value;
    case 'Double':
      return isInt32(v.value) ? v : v.value;
    case 'BSONSymbol':
      return v.value;
    case 'DBRef':
      return restoreNumbers(dbrefDocument(v));
    default:
      return v;
  }
}

/** The fields of a DBRef in their stored order: $ref, $id, $db, then any others. */
function dbrefDocument(ref: DBRef): Doc {
  const out: Doc = { $ref: ref.collection, $id: ref.oid };
  if (ref.db) out.$db = ref.db;
  for (const k of Object.keys(ref.fields)) setField(out, k, ref.fields[k]);
  return out;
}

/**
 * `obj[key] = value` that stores a `__proto__` key as an ordinary field: plain assignment would call
 * the prototype setter instead, losing the field and changing the object's prototype.
 */
export function setField(obj: Doc, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

// Names a plain object inherits (__proto__, constructor, toString, ...): only these need the slower
// own-property check, so reading any other field stays a plain property access.
const INHERITED_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));

/** The own field `key` of a document; never a property inherited from Object.prototype. */
export function getField(obj: any, key: string): any {
  if (!INHERITED_NAMES.has(key)) return obj[key];
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** The BSON type a number is stored as: a JS number is an Int32 when integral and in range, else a Double. */
export type NumberType = 'int' | 'long' | 'double' | 'decimal';

export function numberType(v: any): NumberType | undefined {
  if (typeof v === 'number') return isInt32(v) ? 'int' : 'double';
  switch (v?._bsontype) {
    case 'Int32':
      return 'int';
    case 'Long':
      return 'long';
    case 'Double':
      return 'double';
    case 'Decimal128':
      return 'decimal';
    default:
      return undefined;
  }
}

/** A number to store as a Double (wrapped when bson would otherwise write it as an Int32). */
export function double(n: number): number | Double {
  return isInt32(n) ? new Double(n) : n;
}

export function toNumber(v: any): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  switch (v?._bsontype) {
    case 'Long':
      return (v as Long).toNumber();
    case 'Int32':
    case 'Double':
      return v.value;
    case 'Decimal128':
      return Number.parseFloat(v.toString());
    default:
      return Number.NaN;
  }
}

function cmpBig(x: bigint, y: bigint): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

function compareNumbers(a: any, b: any): number {
  if (typeof a === 'number' && typeof b === 'number') {
    if (a < b) return -1;
    if (a > b) return 1;
    if (a === b) return 0;
    // NaN (unordered by < and >) sorts below every other number, as in MongoDB.
    return Number.isNaN(a) ? (Number.isNaN(b) ? 0 : -1) : 1;
  }
  if (a?._bsontype === 'Long' && b?._bsontype === 'Long') return (a as Long).compare(b as Long);
  // Longs beyond 2^53 lose precision as doubles; compare exactly against integral numbers.
  if (a?._bsontype === 'Long' && typeof b === 'number' && Number.isInteger(b)) return cmpBig((a as Long).toBigInt(), BigInt(b));
  if (b?._bsontype === 'Long' && typeof a === 'number' && Number.isInteger(a)) return cmpBig(BigInt(a), (b as Long).toBigInt());
  const x = toNumber(a);
  const y = toNumber(b);
  // NaN sorts below every other number, as in MongoDB.
  if (Number.isNaN(x)) return Number.isNaN(y) ? 0 : -1;
  if (Number.isNaN(y)) return 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length < 0 ? -1 : a.length > b.length ? 1 : 0;
}

/** The bytes a Binary holds (its buffer may be allocated beyond them). */
export function binaryBytes(b: { buffer: Uint8Array; position?: number }): Uint8Array {
  return b.position === undefined || b.position === b.buffer.length ? b.buffer : b.buffer.subarray(0, b.position);
}

/** bson 7 keeps an ObjectId as four 24-bit integers (i0..i3); comparing them avoids building buffers. */
function compareObjectIds(a: any, b: any): number {
  if (typeof a.i0 === 'number' && typeof b.i0 === 'number') {
    if (a.i0 !== b.i0) return a.i0 < b.i0 ? -1 : 1;
    if (a.i1 !== b.i1) return a.i1 < b.i1 ? -1 : 1;
    if (a.i2 !== b.i2) return a.i2 < b.i2 ? -1 : 1;
    if (a.i3 !== b.i3) return a.i3 < b.i3 ? -1 : 1;
    return 0;
  }
  return compareBytes((a as ObjectId).id, (b as ObjectId).id);
}

function compareObjects(a: Doc, b: Doc, strings: StringCompare | undefined): number {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  const n = Math.min(ka.length, kb.length);
  for (let i = 0; i < n; i++) {
    const va = a[ka[i]];
    const vb = b[kb[i]];
    const r = typeRank(va) - typeRank(vb);
    if (r !== 0) return r < 0 ? -1 : 1;
    if (ka[i] !== kb[i]) return ka[i] < kb[i] ? -1 : 1;
    const c = compareValues(va, vb, strings);
    if (c !== 0) return c;
  }
  return ka.length < kb.length ? -1 : ka.length > kb.length ? 1 : 0;
}

/** How a collation orders two strings (see collation.ts); without one, strings compare by code unit. */
export type StringCompare = (a: string, b: string) => number;

/** BSON order of two values; `strings`, when given, orders strings (also inside arrays and documents). */
export function compareValues(a: any, b: any, strings?: StringCompare): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 1:
    case 2:
    case 13:
      return 0;
    case 3:
      return compareNumbers(a, b);
    case 4: {
      const x = typeof a === 'string' ? a : String(a.value ?? a);
      const y = typeof b === 'string' ? b : String(b.value ?? b);
      if (strings) return strings(x, y);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 5:
      return compareObjects(a, b, strings);
    case 6: {
      const n = Math.min(a.length, b.length);
      for (let i = 0; i < n; i++) {
        const c = compareValues(a[i], b[i], strings);
        if (c !== 0) return c;
      }
      return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
    }
    case 7: {
      // BinData orders by length, then subtype, then bytes.
      const x = binaryBytes(a);
      const y = binaryBytes(b);
      if (x.length !== y.length) return x.length < y.length ? -1 : 1;
      if (a.sub_type !== b.sub_type) return a.sub_type < b.sub_type ? -1 : 1;
      return compareBytes(x, y);
    }
    case 8:
      return compareObjectIds(a, b);
    case 9:
      return a === b ? 0 : a ? 1 : -1;
    case 10: {
      const x = (a as Date).getTime();
      const y = (b as Date).getTime();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 11: {
      const c = a.t - b.t;
      if (c !== 0) return c < 0 ? -1 : 1;
      return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
    }
    case 12: {
      const x = String(a.source ?? a.pattern);
      const y = String(b.source ?? b.pattern);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    default:
      return 0;
  }
}

/** mongod's name for the BSON type of a stored value (as `$type` aggregation returns it). */
export function bsonTypeName(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return numberType(v)!;
    case 'object':
      break;
    default:
      return 'object';
  }
  if (Array.isArray(v)) return 'array';
  if (v instanceof Date) return 'date';
  if (v instanceof RegExp) return 'regex';
  const n = numberType(v);
  if (n) return n;
  switch ((v as { _bsontype?: string })._bsontype) {
    case 'ObjectId':
      return 'objectId';
    case 'Binary':
      return 'binData';
    case 'Timestamp':
      return 'timestamp';
    case 'BSONRegExp':
      return 'regex';
    case 'MinKey':
      return 'minKey';
    case 'MaxKey':
      return 'maxKey';
    case 'Code':
      return (v as { scope?: unknown }).scope ? 'javascriptWithScope' : 'javascript';
    case 'BSONSymbol':
      return 'symbol';
    default:
      return 'object';
  }
}

/** Canonical string of a value: equal BSON values (1, 1.0, Long(1)) give equal strings. */
export function canonicalKey(v: any): string {
  switch (typeRank(v)) {
    case 1:
      return 'm';
    case 2:
      return 'z';
    case 3:
      return v?._bsontype === 'Long' ? 'n' + (v as Long).toString() : 'n' + String(toNumber(v));
    case 4:
      return 's' + (typeof v === 'string' ? v : String(v.value));
    case 5:
      return '{' + Object.keys(v).map((k) => JSON.stringify(k) + ':' + canonicalKey(v[k])).join(',') + '}';
    case 6:
      return '[' + (v as any[]).map(canonicalKey).join(',') + ']';
    case 7:
      return 'B' + v.sub_type + ':' + Buffer.from(binaryBytes(v)).toString('base64');
    case 8:
      return 'o' + (v as ObjectId).toHexString();
    case 9:
      return v ? 't' : 'f';
    case 10:
      return 'd' + (v as Date).getTime();
    case 11:
      return 'T' + v.t + ':' + v.i;
    case 12:
      return 'r' + String(v.source ?? v.pattern) + '/' + String(v.flags ?? v.options);
    default:
      return 'M';
  }
}

/**
 * A shallow copy of a document, for an update to add fields to. Not `{ ...doc }`: V8 gives a spread
 * copy a map that keeps no transitions, so each field added to it afterwards builds a new map (about
 * 1.5 µs a field: Agenda's first $set of a job adds six); fields set one by one share the usual maps.
 */
export function copyFields(doc: Doc): Doc {
  const out: Doc = {};
  for (const k of Object.keys(doc)) setField(out, k, doc[k]);
  return out;
}

/** Deep copy of plain objects and arrays; BSON values (immutable for us) are shared. */
export function deepCopy<T>(v: T): T {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(deepCopy) as T;
  if (v instanceof Date) return new Date(v.getTime()) as T;
  if ((v as any)._bsontype !== undefined || v instanceof RegExp || ArrayBuffer.isView(v)) return v;
  const out: Doc = {};
  for (const k of Object.keys(v)) setField(out, k, deepCopy((v as Doc)[k]));
  return out as T;
}

export function isPlainObject(v: unknown): v is Doc {
  return (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    !(v instanceof RegExp) &&
    (v as any)._bsontype === undefined &&
    !ArrayBuffer.isView(v)
  );
}

/** mongod's rendering of a document in its messages: `{ key: { a: "text" }, name: "a_text" }`. */
export function bsonText(v: unknown): string {
  if (Array.isArray(v)) return `[ ${v.map(bsonText).join(', ')} ]`;
  if (isPlainObject(v)) {
    const fields = Object.entries(v).map(([k, x]) => `${k}: ${bsonText(x)}`);
    return fields.length === 0 ? '{}' : `{ ${fields.join(', ')} }`;
  }
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}
