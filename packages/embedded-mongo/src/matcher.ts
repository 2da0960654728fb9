// Filter evaluation. Common filters (equality, comparisons, $in/$nin, $exists, $and/$or/$nor) are
// compiled into small closures because building a mingo Query costs tens of microseconds per call;
// everything else ($regex, $elemMatch, $expr, ...) is delegated to mingo, which owns the query language.
import { Query } from 'mingo';
import { compareValues, isPlainObject, typeRank, type Doc } from './bson-order.js';

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

type Compiled = { fast: true; pred: Predicate } | { fast: false };

function compileField(path: string, cond: any): Predicate | undefined {
  const parts = path.split('.');
  const isOperatorObject = isPlainObject(cond) && Object.keys(cond).length > 0 && Object.keys(cond).every((k) => k.startsWith('$'));
  if (!isOperatorObject) {
    if (!isSimpleValue(cond)) return undefined;
    return (doc) => eqMatch(fieldValues(doc, path, parts), cond);
  }
  const preds: Predicate[] = [];
  for (const [op, x] of Object.entries(cond as Doc)) {
    switch (op) {
      case '$eq':
        if (!isSimpleValue(x)) return undefined;
        preds.push((doc) => eqMatch(fieldValues(doc, path, parts), x));
        break;
      case '$ne':
        if (!isSimpleValue(x)) return undefined;
        preds.push((doc) => !eqMatch(fieldValues(doc, path, parts), x));
        break;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        if (!isSimpleValue(x) || Array.isArray(x)) return undefined;
        const test = op === '$gt' ? GT : op === '$gte' ? GTE : op === '$lt' ? LT : LTE;
        preds.push((doc) => cmpMatch(fieldValues(doc, path, parts), x, test));
        break;
      }
      case '$in':
      case '$nin': {
        if (!Array.isArray(x) || !x.every(isSimpleValue)) return undefined;
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
      default:
        return undefined;
    }
  }
  if (preds.length === 1) return preds[0];
  return (doc) => preds.every((p) => p(doc));
}

function compileFast(filter: Doc): Compiled {
  const preds: Predicate[] = [];
  for (const [key, cond] of Object.entries(filter)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(cond) || cond.length === 0) return { fast: false };
      const subs: Predicate[] = [];
      for (const sub of cond) {
        if (!isPlainObject(sub)) return { fast: false };
        const c = compileFast(sub);
        if (!c.fast) return c;
        subs.push(c.pred);
      }
      if (key === '$and') preds.push((doc) => subs.every((p) => p(doc)));
      else if (key === '$or') preds.push((doc) => subs.some((p) => p(doc)));
      else preds.push((doc) => !subs.some((p) => p(doc)));
      continue;
    }
    if (key.startsWith('$')) return { fast: false };
    const p = compileField(key, cond);
    if (!p) return { fast: false };
    preds.push(p);
  }
  if (preds.length === 0) return { fast: true, pred: () => true };
  if (preds.length === 1) return { fast: true, pred: preds[0] };
  return { fast: true, pred: (doc) => preds.every((p) => p(doc)) };
}

export function compileFilter(filter: Doc | undefined): Predicate {
  if (!filter || Object.keys(filter).length === 0) return () => true;
  const c = compileFast(filter);
  if (c.fast) return c.pred;
  const q = new Query(filter, {});
  return (doc) => q.test(doc);
}
