// BSON sizes, exactly as bson's calculateObjectSize counts them. Every write measures its document (the
// 16 MiB limit, collStats) and, with a change stream open, its change event: bson's walk costs about
// 1 µs for a ten-field document. The types stored documents and events hold are counted here directly;
// anything else (a regex, Code, a DBRef object, a Map, a class instance, a foreign bson version,
// nesting past 100 levels) sends the whole document to calculateObjectSize.
import { BSON } from 'bson';
import type { Doc } from './bson-order.js';

const BSON_VERSION = Symbol.for('@@mdb.bson.version');
const BSON_MAJOR = 7;
const MAX_DEPTH = 100;
/** Returned by the direct count when the document needs bson's. */
const ASK_BSON = -1;

export function bsonSize(doc: Doc, ignoreUndefined = false): number {
  const n = objectSize(doc, ignoreUndefined, 0);
  return n === ASK_BSON ? BSON.calculateObjectSize(doc, { ignoreUndefined }) : n;
}

function utf8Bytes(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

function digits(i: number): number {
  return i < 10 ? 1 : i < 100 ? 2 : i < 1000 ? 3 : String(i).length;
}

function objectSize(obj: Doc, ignoreUndefined: boolean, depth: number): number {
  const proto = Object.getPrototypeOf(obj);
  if ((proto !== Object.prototype && proto !== null) || depth > MAX_DEPTH || typeof obj.toBSON === 'function') return ASK_BSON;
  let total = 5;
  for (const key of Object.keys(obj)) {
    const n = valueSize(obj[key], false, ignoreUndefined, depth);
    if (n === ASK_BSON) return ASK_BSON;
    // Skipped values (undefined when ignored) take no name either.
    if (n > 0) total += 1 + utf8Bytes(key) + 1 + n - 1;
  }
  return total;
}

function arraySize(arr: unknown[], ignoreUndefined: boolean, depth: number): number {
  if (Object.getPrototypeOf(arr) !== Array.prototype || depth > MAX_DEPTH) return ASK_BSON;
  let total = 5;
  for (let i = 0; i < arr.length; i++) {
    const n = valueSize(arr[i], true, ignoreUndefined, depth);
    if (n === ASK_BSON) return ASK_BSON;
    total += 1 + digits(i) + 1 + n - 1;
  }
  return total;
}

/** The value's bytes plus one (so that 0 can mean "not written"), or ASK_BSON. */
function valueSize(value: any, inArray: boolean, ignoreUndefined: boolean, depth: number): number {
  switch (typeof value) {
    case 'string':
      return 1 + 4 + utf8Bytes(value) + 1;
    case 'number':
      return 1 + (Math.floor(value) === value && !Object.is(value, -0) && value >= -2147483648 && value <= 2147483647 ? 4 : 8);
    case 'boolean':
      return 1 + 1;
    case 'bigint':
      return 1 + 8;
    case 'undefined':
      return inArray || !ignoreUndefined ? 1 : 0;
    case 'object':
      break;
    default:
      return ASK_BSON;
  }
  if (value === null) return 1;
  if (typeof value.toBSON === 'function') return ASK_BSON;
  const type = value._bsontype;
  if (typeof type === 'string') {
    if (value[BSON_VERSION] !== BSON_MAJOR) return ASK_BSON;
    switch (type) {
      case 'ObjectId':
        return 1 + 12;
      case 'Long':
      case 'Double':
      case 'Timestamp':
        return 1 + 8;
      case 'Int32':
        return 1 + 4;
      case 'Decimal128':
        return 1 + 16;
      case 'MinKey':
      case 'MaxKey':
        return 1;
      case 'Binary':
        return 1 + 4 + 1 + value.position + (value.sub_type === 2 ? 4 : 0);
      default:
        return ASK_BSON;
    }
  }
  if (value instanceof Date) return 1 + 8;
  const n = Array.isArray(value) ? arraySize(value, ignoreUndefined, depth + 1) : objectSize(value, ignoreUndefined, depth + 1);
  return n === ASK_BSON ? ASK_BSON : 1 + n;
}

const measured = new WeakMap<Doc, number>();

/**
 * The BSON size of a document that is, or is about to be, stored: measured once and kept beside it
 * (weakly, so a replaced document takes it along). Stored documents are never changed in place, so the
 * size measured when a write checks it serves its change event and collStats later.
 */
export function documentBytes(doc: Doc): number {
  let n = measured.get(doc);
  if (n === undefined) {
    n = bsonSize(doc);
    measured.set(doc, n);
  }
  return n;
}
