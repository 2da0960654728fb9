// Filter evaluation. Common filters (equality, comparisons, $in/$nin, $exists, $and/$or/$nor) are
// compiled into small closures because building a mingo Query costs tens of microseconds per call;
// everything else ($regex, $elemMatch, $expr, ...) is delegated to mingo, which owns the query language.
import { Query } from 'mingo';
import { compareValues, isPlainObject, numberType, typeRank, type Doc } from './bson-order.js';
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
    return pathValues(doc[parts[i]], parts, i + 1, out);
  }
  out.push(undefined);
  return out;
}

/** A plain value at a dotted path without array expansion (used by sorts and projections). */
export function getPath(doc: any, path: string): any {
  if (!path.includes('.')) return doc?.[path];
  let cur = doc;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[p];
  }
  return cur;
}

function isSimpleValue(v: unknown): boolean {
  if (v instanceof RegExp) return false;
  const r = typeRank(v);
  if (r === 12) return false;
  if (r === 5) {
    // An embedded document compared by whole value: only when no key is an operator.
    return Object.keys(v as Doc).every((k) => !k.startsWith('$') && isSimpleValue((v as Doc)[k]));
  }
  if (r === 6) return (v as any[]).every(isSimpleValue);
  return true;
}

function eqOne(v: any, x: any): boolean {
  // Strings and plain numbers (the common array elements: op ids, tags) compare directly.
  if (typeof x === 'string') return v === x;
  if (typeof x === 'number' && typeof v === 'number') return v === x || (v !== v && x !== x);
  if (x === null || x === undefined) return v === null || v === undefined;
  if (v === undefined) return false;
  return typeRank(v) === typeRank(x) && compareValues(v, x) === 0;
}

/** MongoDB equality on one candidate: an array field matches if it equals x or holds an element equal to x. */
function eqMatch(values: any[], x: any): boolean {
  for (const v of values) {
    if (eqOne(v, x)) return true;
    if (Array.isArray(v)) {
      if (x === null && v.length === 0) continue;
      for (const el of v) if (eqOne(el, x)) return true;
    }
  }
  return false;
}

function cmpOne(v: any, x: any, rx: number, test: (c: number) => boolean): boolean {
  if (x === null) return (v === null || v === undefined) && test(0);
  return typeRank(v) === rx && test(compareValues(v, x));
}

function cmpMatch(values: any[], x: any, test: (c: number) => boolean): boolean {
  const rx = typeRank(x);
  for (const v of values) {
    if (cmpOne(v, x, rx, test)) return true;
    if (Array.isArray(v)) for (const el of v) if (cmpOne(el, x, rx, test)) return true;
  }
  return false;
}

const GT = (c: number): boolean => c > 0;
const GTE = (c: number): boolean => c >= 0;
const LT = (c: number): boolean => c < 0;
const LTE = (c: number): boolean => c <= 0;

function fieldValues(doc: Doc, path: string, parts: string[]): any[] {
  return parts.length === 1 ? [doc[path]] : pathValues(doc, parts);
}

function inMatch(values: any[], list: any[]): boolean {
  for (const item of list) if (eqMatch(values, item)) return true;
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
// read, so a misspelt operator fails on an empty collection too instead of matching nothing.
const MINGO_FIELD_OPERATORS = new Set([
  '$regex', '$options', '$elemMatch', '$size', '$all', '$mod', '$bitsAllSet', '$bitsAllClear', '$bitsAnySet', '$bitsAnyClear',
  '$geoWithin', '$geoIntersects', '$near', '$nearSphere', '$maxDistance', '$minDistance', '$within',
]);
const MINGO_TOP_LEVEL_OPERATORS = new Set(['$expr', '$where', '$comment', '$text', '$alwaysTrue', '$alwaysFalse']);

/** mingo's options: its $jsonSchema (inside $elemMatch, or a later $match stage) uses json-schema.ts. */
export const MINGO_OPTIONS = {
  jsonSchemaValidator: (schema: Doc): Predicate => {
    const compiled = compileJsonSchema(schema);
    return (doc) => compiled.test(doc);
  },
};

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

function compileField(path: string, cond: any): Predicate {
  const parts = path.split('.');
  const isOperatorObject = isPlainObject(cond) && Object.keys(cond).length > 0 && Object.keys(cond).every((k) => k.startsWith('$'));
  if (!isOperatorObject) {
    if (!isSimpleValue(cond)) return mingoPredicate({ [path]: cond });
    return (doc) => eqMatch(fieldValues(doc, path, parts), cond);
  }
  const preds: Predicate[] = [];
  // Operators left to mingo, evaluated together ($regex needs its $options, $near its distances).
  const rest: Doc = {};
  for (const [op, x] of Object.entries(cond as Doc)) {
    switch (op) {
      case '$eq':
        if (!isSimpleValue(x)) rest[op] = x;
        else preds.push((doc) => eqMatch(fieldValues(doc, path, parts), x));
        break;
      case '$ne':
        if (!isSimpleValue(x)) rest[op] = x;
        else preds.push((doc) => !eqMatch(fieldValues(doc, path, parts), x));
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
        preds.push((doc) => cmpMatch(fieldValues(doc, path, parts), x, test));
        break;
      }
      case '$in':
      case '$nin': {
        if (!Array.isArray(x) || !x.every(isSimpleValue)) {
          rest[op] = x;
          break;
        }
        const list = x as any[];
        if (op === '$in') preds.push((doc) => inMatch(fieldValues(doc, path, parts), list));
        else preds.push((doc) => !inMatch(fieldValues(doc, path, parts), list));
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
      case '$not': {
        // An operator document is negated here (so {$not: {$type}} keeps this file's $type); a regex goes to mingo.
        if (!isPlainObject(x) || Object.keys(x).length === 0 || !Object.keys(x).every((k) => k.startsWith('$'))) {
          rest[op] = x;
          break;
        }
        const inner = compileField(path, x);
        preds.push((doc) => !inner(doc));
        break;
      }
      default:
        if (!MINGO_FIELD_OPERATORS.has(op)) throw new MongoError(2, `unknown operator: ${op}`, 'BadValue');
        rest[op] = x;
    }
  }
  if (Object.keys(rest).length > 0) preds.push(mingoPredicate({ [path]: rest }));
  return all(preds);
}

/**
 * Compiles a filter into closures, condition by condition; a condition they do not cover goes to mingo
 * on its own, so the rest of the filter (and this file's $type) still applies as written here.
 */
function compileParts(filter: Doc): Predicate {
  const preds: Predicate[] = [];
  for (const [key, cond] of Object.entries(filter)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(cond) || cond.length === 0 || !cond.every(isPlainObject)) {
        preds.push(mingoPredicate({ [key]: cond }));
        continue;
      }
      const subs = cond.map(compileParts);
      if (key === '$and') preds.push((doc) => subs.every((p) => p(doc)));
      else if (key === '$or') preds.push((doc) => subs.some((p) => p(doc)));
      else preds.push((doc) => !subs.some((p) => p(doc)));
      continue;
    }
    if (key === '$jsonSchema') {
      const schema = compileJsonSchema(cond);
      preds.push((doc) => schema.test(doc));
      continue;
    }
    if (key.startsWith('$') && !MINGO_TOP_LEVEL_OPERATORS.has(key)) throw new MongoError(2, `unknown top level operator: ${key}`, 'BadValue');
    preds.push(key.startsWith('$') ? mingoPredicate({ [key]: cond }) : compileField(key, cond));
  }
  return all(preds);
}

export function compileFilter(filter: Doc | undefined): Predicate {
  if (!filter || Object.keys(filter).length === 0) return () => true;
  return compileParts(filter);
}
