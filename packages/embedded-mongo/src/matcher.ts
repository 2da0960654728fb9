// Filter evaluation. Common filters (equality, comparisons, $in/$nin, $exists, $all, $elemMatch,
// the bit tests, $and/$or/$nor) are compiled into small closures because building a mingo Query costs
// tens of microseconds per call; the rest ($regex, $mod, $expr, ...) is delegated to mingo, which owns
// the query language. What the server does not implement (geospatial and text search, server-side
// JavaScript) is refused with the error mongod gives when it cannot serve them.
import { Long, type Binary } from 'bson';
import { Query } from 'mingo';
import { binaryBytes, compareValues, getField, isPlainObject, numberType, typeRank, type Doc, type StringCompare } from './bson-order.js';
import { comparingOperator, holdsString, notWithCollation } from './collation.js';
import { MongoError } from './errors.js';
import { compileJsonSchema } from './json-schema.js';

export type Predicate = (doc: Doc) => boolean;

/** Values found at a dotted path, descending through arrays as MongoDB does; missing is undefined. */
export function pathValues(doc: any, parts: string[], i = 0, out: any[] = []): any[] {
  if (i === parts.length) {
    out.push(doc);
    return out;
  }
  if (Array.isArray(doc)) {
    const part = parts[i];
    const idx = /^\d+$/.test(part) ? Number(part) : -1;
    if (idx >= 0) {
      pathValues(doc[idx], parts, i + 1, out);
      return out;
    }
    let any = false;
    for (const el of doc) {
      if (el !== null && typeof el === 'object' && !Array.isArray(el)) {
        pathValues(el, parts, i, out);
        any = true;
      }
    }
    if (!any) out.push(undefined);
    return out;
  }
  if (doc !== null && typeof doc === 'object' && isPlainObject(doc)) {
    return pathValues(getField(doc, parts[i]), parts, i + 1, out);
  }
  out.push(undefined);
  return out;
}

/** A plain value at a dotted path without array expansion (used by sorts and projections). */
export function getPath(doc: any, path: string): any {
  let cur = doc;
  for (const p of path.includes('.') ? path.split('.') : [path]) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = getField(cur, p);
  }
  return cur;
}

const DBREF_FIELDS = new Set(['$ref', '$id', '$db']);

/** mongod's test for a DBRef document in a query: it holds $ref and $id (any of the three when `incomplete`). */
function isDBRef(o: Doc, incomplete: boolean): boolean {
  const keys = Object.keys(o);
  return incomplete ? keys.some((k) => DBREF_FIELDS.has(k)) : keys.includes('$ref') && keys.includes('$id');
}

/** Whether a condition is a document of operators ({$gt: 1}) rather than a value to compare with. */
function isOperatorObject(cond: unknown): cond is Doc {
  if (!isPlainObject(cond)) return false;
  const keys = Object.keys(cond);
  return keys.length > 0 && keys[0].startsWith('$') && !isDBRef(cond, false);
}

function isSimpleValue(v: unknown): boolean {
  if (v instanceof RegExp) return false;
  const r = typeRank(v);
  if (r === 12) return false;
  if (r === 5) {
    // An embedded document compared by whole value: only when no key is an operator (a DBRef's are fields).
    return Object.keys(v as Doc).every((k) => (!k.startsWith('$') || DBREF_FIELDS.has(k)) && isSimpleValue((v as Doc)[k]));
  }
  if (r === 6) return (v as any[]).every(isSimpleValue);
  return true;
}

function eqOne(v: any, x: any, strings: StringCompare | undefined): boolean {
  // Strings and plain numbers (the common array elements: op ids, tags) compare directly.
  if (typeof x === 'string') return v === x || (strings !== undefined && typeof v === 'string' && strings(v, x) === 0);
  if (typeof x === 'number' && typeof v === 'number') return v === x || (v !== v && x !== x);
  if (x === null || x === undefined) return v === null || v === undefined;
  if (v === undefined) return false;
  return typeRank(v) === typeRank(x) && compareValues(v, x, strings) === 0;
}

/** MongoDB equality on one candidate: an array field matches if it equals x or holds an element equal to x. */
function eqMatch(values: any[], x: any, strings: StringCompare | undefined): boolean {
  for (const v of values) {
    if (eqOne(v, x, strings)) return true;
    if (Array.isArray(v)) {
      if (x === null && v.length === 0) continue;
      for (const el of v) if (eqOne(el, x, strings)) return true;
    }
  }
  return false;
}

function cmpOne(v: any, x: any, rx: number, test: (c: number) => boolean, strings: StringCompare | undefined): boolean {
  if (x === null) return (v === null || v === undefined) && test(0);
  return typeRank(v) === rx && test(compareValues(v, x, strings));
}

function cmpMatch(values: any[], x: any, test: (c: number) => boolean, strings: StringCompare | undefined): boolean {
  const rx = typeRank(x);
  for (const v of values) {
    if (cmpOne(v, x, rx, test, strings)) return true;
    if (Array.isArray(v)) for (const el of v) if (cmpOne(el, x, rx, test, strings)) return true;
  }
  return false;
}

const GT = (c: number): boolean => c > 0;
const GTE = (c: number): boolean => c >= 0;
const LT = (c: number): boolean => c < 0;
const LTE = (c: number): boolean => c <= 0;

function fieldValues(doc: Doc, path: string, parts: string[]): any[] {
  return parts.length === 1 ? [getField(doc, path)] : pathValues(doc, parts);
}

function inMatch(values: any[], list: any[], strings: StringCompare | undefined): boolean {
  for (const item of list) if (eqMatch(values, item, strings)) return true;
  return false;
}

// $type's aliases and their numeric codes (https://www.mongodb.com/docs/manual/reference/bson-types/).
const TYPE_CODES: Record<string, number> = {
  double: 1, string: 2, object: 3, array: 4, binData: 5, undefined: 6, objectId: 7, bool: 8, date: 9, null: 10,
  regex: 11, dbPointer: 12, javascript: 13, symbol: 14, javascriptWithScope: 15, int: 16, timestamp: 17, long: 18,
  decimal: 19, minKey: -1, maxKey: 127,
};
const NUMBER_CODES: Record<string, number> = { int: 16, long: 18, double: 1, decimal: 19 };
const BSONTYPE_CODES: Record<string, number> = {
  ObjectId: 7, Binary: 5, Timestamp: 17, BSONRegExp: 11, MinKey: -1, MaxKey: 127, Code: 13, DBRef: 3, BSONSymbol: 14,
};

/** The BSON type code a stored value has; undefined for a missing field. */
function typeCode(v: any): number | undefined {
  if (v === undefined) return undefined;
  if (v === null) return 10;
  switch (typeof v) {
    case 'string':
      return 2;
    case 'boolean':
      return 8;
    case 'number':
      return NUMBER_CODES[numberType(v)!];
  }
  if (Array.isArray(v)) return 4;
  if (v instanceof Date) return 9;
  if (v instanceof RegExp) return 11;
  const n = numberType(v);
  if (n) return NUMBER_CODES[n];
  const t = v._bsontype as string | undefined;
  if (t === 'Code') return v.scope ? 15 : 13;
  return t === undefined ? 3 : BSONTYPE_CODES[t];
}

/** The codes `{$type: x}` accepts ('number' stands for the four numeric types); BadValue as mongod says. */
function typeSet(x: unknown): Set<number> {
  const out = new Set<number>();
  for (const t of Array.isArray(x) ? x : [x]) {
    if (t === 'number') for (const c of Object.values(NUMBER_CODES)) out.add(c);
    else if (typeof t === 'string') {
      if (!(t in TYPE_CODES)) throw new MongoError(2, `Unknown type name alias: ${t}`, 'BadValue');
      out.add(TYPE_CODES[t]);
    } else if (typeof t === 'number' && Object.values(TYPE_CODES).includes(t)) out.add(t);
    else throw new MongoError(2, `Invalid numerical type code: ${String(t)}`, 'BadValue');
  }
  return out;
}

/** $type matches a field of one of the types, or an array field holding an element of one. */
function typeMatch(values: any[], codes: Set<number>): boolean {
  for (const v of values) {
    const c = typeCode(v);
    if (c !== undefined && codes.has(c)) return true;
    if (Array.isArray(v)) for (const el of v) if (codes.has(typeCode(el)!)) return true;
  }
  return false;
}

// The query operators left to mingo. Any other is refused as mongod refuses it, before any document is
// read, so a misspelt operator fails on an empty collection too instead of matching nothing. The
// geospatial operators that need no index ($geoWithin, $geoIntersects, $within) are not implemented,
// so they get that refusal too rather than a wrong answer.
const MINGO_FIELD_OPERATORS = new Set(['$regex', '$options', '$size', '$mod']);
const MINGO_TOP_LEVEL_OPERATORS = new Set(['$expr', '$comment', '$alwaysTrue', '$alwaysFalse']);
/** Top-level operators that apply to the whole document; any other `$` key leads a value $elemMatch. */
const PATHLESS_OPERATORS = new Set(['$and', '$or', '$nor', '$where', '$text', '$comment', '$expr', '$jsonSchema', '$alwaysTrue', '$alwaysFalse', '$sampleRate']);

/** mingo's options: its $jsonSchema (inside $elemMatch, or a later $match stage) uses json-schema.ts. */
export const MINGO_OPTIONS = {
  jsonSchemaValidator: (schema: Doc): Predicate => {
    const compiled = compileJsonSchema(schema);
    return (doc) => compiled.test(doc);
  },
};

/** mongod's planner error for $near/$nearSphere without a geospatial index, which this server never has. */
const noGeoIndex = (): MongoError =>
  new MongoError(291, 'error processing query: planner returned error :: caused by :: unable to find index for $geoNear query', 'NoQueryExecutionPlans');

/** Refuses $function and $accumulator anywhere in an expression, as a mongod without a JavaScript engine does. */
export function refuseJavaScript(expr: unknown): void {
  if (Array.isArray(expr)) {
    for (const x of expr) refuseJavaScript(x);
    return;
  }
  if (!isPlainObject(expr)) return;
  for (const [k, v] of Object.entries(expr)) {
    if (k === '$function' || k === '$accumulator') {
      throw new MongoError(31264, 'Cannot run server-side javascript without the javascript engine enabled', 'Location31264');
    }
    if (k !== '$literal') refuseJavaScript(v);
  }
}

/** mingo's evaluation of one condition the closures below do not cover. */
function mingoPredicate(filter: Doc): Predicate {
  const q = new Query(filter, MINGO_OPTIONS);
  return (doc) => q.test(doc);
}

function all(preds: Predicate[]): Predicate {
  if (preds.length === 0) return () => true;
  if (preds.length === 1) return preds[0];
  return (doc) => preds.every((p) => p(doc));
}

/** `{$all: [a, b]}`: the field matches each of the values (or $elemMatch conditions); an empty list matches nothing. */
function compileAll(path: string, list: unknown, strings: StringCompare | undefined): Predicate {
  if (!Array.isArray(list)) throw new MongoError(2, '$all needs an array', 'BadValue');
  if (list.length === 0) return () => false;
  return all(list.map((v) => compileField(path, isPlainObject(v) && !('$elemMatch' in v) ? { $eq: v } : v, strings)));
}

/**
 * `{$elemMatch: q}` matches an array holding an element q matches. Led by an operator, q tests each
 * element's value ({$gte: 80}); otherwise it is a query on each element document, where $ref, $id and
 * $db name DBRef fields.
 */
function compileElemMatch(path: string, parts: string[], q: unknown, strings: StringCompare | undefined): Predicate {
  const test = compileElementMatch(q, strings);
  return (doc) => fieldValues(doc, path, parts).some((v) => Array.isArray(v) && v.some(test));
}

/** The test an `$elemMatch: q` applies to each array element (also used by the $elemMatch projection). */
export function compileElementMatch(q: unknown, strings?: StringCompare): (element: unknown) => boolean {
  if (!isPlainObject(q)) throw new MongoError(2, '$elemMatch needs an Object', 'BadValue');
  const first = Object.keys(q)[0];
  if (first?.startsWith('$') && !isDBRef(q, true) && !PATHLESS_OPERATORS.has(first)) {
    const pred = compileField('e', q, strings);
    return (element) => pred({ e: element });
  }
  const pred = compileParts(q, strings);
  return (element) => (isPlainObject(element) || Array.isArray(element)) && pred(element as Doc);
}

type BitTest = '$bitsAllSet' | '$bitsAnySet' | '$bitsAllClear' | '$bitsAnyClear';

/** The bit positions a $bits* operand names: a list of positions, a non-negative integer, or BinData. */
function bitPositions(path: string, op: BitTest, x: any): number[] {
  if (Array.isArray(x)) {
    for (const p of x) {
      if (typeof p !== 'number' || !Number.isInteger(p)) throw new MongoError(2, `bit positions must be an integer but got: ${op}: ${JSON.stringify(x)}`, 'BadValue');
      if (p < 0) throw new MongoError(2, `bit positions must be >= 0 but got: ${op}: ${JSON.stringify(x)}`, 'BadValue');
    }
    return x;
  }
  if (x?._bsontype === 'Binary') {
    const bytes = binaryBytes(x as Binary);
    const out: number[] = [];
    for (let i = 0; i < bytes.length * 8; i++) if ((bytes[i >> 3] >> (i & 7)) & 1) out.push(i);
    return out;
  }
  if (numberType(x)) {
    const n = int64(x);
    if (n === undefined) throw new MongoError(9, `Expected an integer: ${op}: ${String(x)}`, 'FailedToParse');
    if (n < 0n) throw new MongoError(9, `Expected a non-negative number in: ${op}: ${String(x)}`, 'FailedToParse');
    const out: number[] = [];
    for (let i = 0; i < 64; i++) if ((n >> BigInt(i)) & 1n) out.push(i);
    return out;
  }
  throw new MongoError(2, `${path} takes an Array, a number, or a BinData but received: ${op}: ${String(x)}`, 'BadValue');
}

/** A number's value as a 64-bit integer; undefined when it is fractional or out of range. */
function int64(v: any): bigint | undefined {
  if (v?._bsontype === 'Long') return (v as Long).toBigInt();
  const text = v?._bsontype === 'Decimal128' ? String(v) : undefined;
  if (text !== undefined) {
    if (!/^-?\d+$/.test(text)) return undefined;
    const n = BigInt(text);
    return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
  }
  const n = typeof v === 'number' ? v : Number(v?.value);
  return Number.isInteger(n) && n >= -(2 ** 63) && n < 2 ** 63 ? BigInt(n) : undefined;
}

/** Whether bit `i` of a stored value is set: integers in two's complement, BinData little-endian by byte. */
function bitReader(v: any): ((i: number) => boolean) | undefined {
  if (v?._bsontype === 'Binary') {
    const bytes = binaryBytes(v as Binary);
    return (i) => i >> 3 < bytes.length && ((bytes[i >> 3] >> (i & 7)) & 1) === 1;
  }
  const n = numberType(v) ? int64(v) : undefined;
  if (n === undefined) return undefined;
  return (i) => ((n >> BigInt(i)) & 1n) === 1n;
}

/** The $bits* operators on numbers and BinData; other types (and fractional numbers) never match. */
function compileBits(path: string, parts: string[], op: BitTest, x: unknown): Predicate {
  const positions = bitPositions(path, op, x);
  const want = op === '$bitsAllSet' || op === '$bitsAnySet';
  const every = op === '$bitsAllSet' || op === '$bitsAllClear';
  const test = (v: unknown): boolean => {
    const bit = bitReader(v);
    if (!bit) return false;
    return every ? positions.every((i) => bit(i) === want) : positions.some((i) => bit(i) === want);
  };
  return (doc) => fieldValues(doc, path, parts).some((v) => test(v) || (Array.isArray(v) && v.some(test)));
}

function compileField(path: string, cond: any, strings: StringCompare | undefined): Predicate {
  const parts = path.split('.');
  if (!isOperatorObject(cond)) {
    if (!isSimpleValue(cond)) {
      if (strings && holdsString(cond)) throw notWithCollation(`Equality to a value holding a regex on '${path}'`);
      return mingoPredicate({ [path]: cond });
    }
    return (doc) => eqMatch(fieldValues(doc, path, parts), cond, strings);
  }
  if ('$near' in cond || '$nearSphere' in cond) throw noGeoIndex();
  const preds: Predicate[] = [];
  // Operators left to mingo, evaluated together ($regex needs its $options).
  const rest: Doc = {};
  for (const [op, x] of Object.entries(cond as Doc)) {
    switch (op) {
      case '$eq':
        if (!isSimpleValue(x)) rest[op] = x;
        else preds.push((doc) => eqMatch(fieldValues(doc, path, parts), x, strings));
        break;
      case '$ne':
        if (!isSimpleValue(x)) rest[op] = x;
        else preds.push((doc) => !eqMatch(fieldValues(doc, path, parts), x, strings));
        break;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        if (!isSimpleValue(x) || Array.isArray(x)) {
          rest[op] = x;
          break;
        }
        const test = op === '$gt' ? GT : op === '$gte' ? GTE : op === '$lt' ? LT : LTE;
        preds.push((doc) => cmpMatch(fieldValues(doc, path, parts), x, test, strings));
        break;
      }
      case '$in':
      case '$nin': {
        if (Array.isArray(x) && x.every(isSimpleValue)) {
          const list = x as any[];
          if (op === '$in') preds.push((doc) => inMatch(fieldValues(doc, path, parts), list, strings));
          else preds.push((doc) => !inMatch(fieldValues(doc, path, parts), list, strings));
          break;
        }
        // Under a collation a list holding regexes is split: they match strings by pattern (in mingo,
        // binary as on mongod), every other value is compared here by the collation. Without one mingo
        // takes the whole list, which is faster than the split.
        const list = strings && Array.isArray(x) ? x.filter(isSimpleValue) : [];
        const patterns = strings && Array.isArray(x) ? x.filter((v) => typeRank(v) === 12) : [];
        if (patterns.length === 0 || list.length + patterns.length !== (x as unknown[]).length) {
          rest[op] = x;
          break;
        }
        const matchesPattern = mingoPredicate({ [path]: { $in: patterns } });
        const found = (doc: Doc): boolean => inMatch(fieldValues(doc, path, parts), list, strings) || matchesPattern(doc);
        preds.push(op === '$in' ? found : (doc) => !found(doc));
        break;
      }
      case '$exists': {
        const want = Boolean(x);
        preds.push((doc) => fieldValues(doc, path, parts).some((v) => v !== undefined) === want);
        break;
      }
      case '$type': {
        const codes = typeSet(x);
        preds.push((doc) => typeMatch(fieldValues(doc, path, parts), codes));
        break;
      }
      case '$all':
        preds.push(compileAll(path, x, strings));
        break;
      case '$elemMatch':
        preds.push(compileElemMatch(path, parts, x, strings));
        break;
      case '$bitsAllSet':
      case '$bitsAnySet':
      case '$bitsAllClear':
      case '$bitsAnyClear':
        preds.push(compileBits(path, parts, op, x));
        break;
      case '$not': {
        // An operator document is negated here (so {$not: {$type}} keeps this file's $type); a regex goes to mingo.
        if (!isOperatorObject(x)) {
          rest[op] = x;
          break;
        }
        const inner = compileField(path, x, strings);
        preds.push((doc) => !inner(doc));
        break;
      }
      default:
        if (!MINGO_FIELD_OPERATORS.has(op)) throw new MongoError(2, `unknown operator: ${op}`, 'BadValue');
        rest[op] = x;
    }
  }
  if (Object.keys(rest).length > 0) {
    // mingo compares strings by code unit: refuse an operand of it holding one ($regex ignores collation).
    const binary = strings && Object.keys(rest).find((op) => op !== '$regex' && op !== '$options' && holdsString(rest[op]));
    if (binary) throw notWithCollation(`${binary} on '${path}' with a regex or $-prefixed field in its value`);
    preds.push(mingoPredicate({ [path]: rest }));
  }
  return all(preds);
}

/**
 * Compiles a filter into closures, condition by condition; a condition they do not cover goes to mingo
 * on its own, so the rest of the filter (and this file's $type) still applies as written here.
 */
function compileParts(filter: Doc, strings: StringCompare | undefined): Predicate {
  const preds: Predicate[] = [];
  for (const [key, cond] of Object.entries(filter)) {
    switch (key) {
      case '$and':
      case '$or':
      case '$nor': {
        if (!Array.isArray(cond) || cond.length === 0) throw new MongoError(2, '$and/$or/$nor must be a nonempty array', 'BadValue');
        if (!cond.every(isPlainObject)) throw new MongoError(2, '$or/$and/$nor entries need to be full objects', 'BadValue');
        const subs = cond.map((sub) => compileParts(sub, strings));
        if (key === '$and') preds.push((doc) => subs.every((p) => p(doc)));
        else if (key === '$or') preds.push((doc) => subs.some((p) => p(doc)));
        else preds.push((doc) => !subs.some((p) => p(doc)));
        continue;
      }
      case '$where':
        // mongod without a JavaScript engine (this server runs none) refuses $where as it parses it.
        throw new MongoError(6108304, 'no globalScriptEngine in $where parsing', 'Location6108304');
      case '$text':
        // Text indexes are refused (createIndexes), so there is never one to serve $text: mongod's answer.
        throw new MongoError(27, 'text index required for $text query', 'IndexNotFound');
      case '$ref':
      case '$id':
      case '$db':
        // DBRef fields, compared by value (an element query inside $elemMatch: {$id: x}).
        preds.push((doc) => eqMatch([getField(doc, key)], cond, strings));
        continue;
      case '$expr': {
        refuseJavaScript(cond);
        const comparing = strings && comparingOperator(cond);
        if (comparing) throw notWithCollation(`${comparing} in $expr`);
        break;
      }
    }
    if (key === '$jsonSchema') {
      const schema = compileJsonSchema(cond);
      preds.push((doc) => schema.test(doc));
      continue;
    }
    if (key.startsWith('$') && !MINGO_TOP_LEVEL_OPERATORS.has(key)) throw new MongoError(2, `unknown top level operator: ${key}`, 'BadValue');
    preds.push(key.startsWith('$') ? mingoPredicate({ [key]: cond }) : compileField(key, cond, strings));
  }
  return all(preds);
}

/**
 * `strings` is the collation's string order: it applies to the comparisons compiled here (equality,
 * $ne, $gt..$lte, $in/$nin, $all, $elemMatch, whole arrays and documents); $regex ignores collation,
 * as on mongod.
 */
export function compileFilter(filter: Doc | undefined, strings?: StringCompare): Predicate {
  if (!filter || Object.keys(filter).length === 0) return () => true;
  return compileParts(filter, strings);
}

/**
 * The index of the first element of the array at `arrayPath` that the filter's conditions on that array
 * match: the element a positional `$` stands for (in updates and projections); -1 when there is none.
 */
export function positionalIndex(doc: Doc, arrayPath: string, filter: Doc, strings?: StringCompare): number {
  const conditions: Doc[] = [];
  const collect = (f: Doc): void => {
    for (const [k, cond] of Object.entries(f)) {
      if (k === '$and' && Array.isArray(cond)) for (const sub of cond) if (isPlainObject(sub)) collect(sub);
      if (k === arrayPath || k.startsWith(arrayPath + '.')) conditions.push({ [k]: cond });
    }
  };
  collect(filter);
  const array = getPath(doc, arrayPath);
  if (conditions.length === 0 || !Array.isArray(array)) return -1;
  const pred = compileFilter({ $and: conditions }, strings);
  const parts = arrayPath.split('.');
  for (let i = 0; i < array.length; i++) {
    let probe: Doc = { [parts[parts.length - 1]]: [array[i]] };
    for (let j = parts.length - 2; j >= 0; j--) probe = { [parts[j]]: probe };
    if (pred(probe)) return i;
  }
  return -1;
}
