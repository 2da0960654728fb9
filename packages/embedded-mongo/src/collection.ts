// One collection: documents by record id, its indexes, and the query planner that turns a filter into
// index range scans. Documents are never mutated in place (updates build a new object), so cursors can
// hold references safely.
import { canonicalKey, compareValues, isPlainObject, typeRank, type Doc, type StringCompare } from './bson-order.js';
import { collatorFor, sameCollation, type Collator } from './collation.js';
import { MongoError } from './errors.js';
import { hashedIndexKeys, hashKey } from './hashed.js';
import { compileFilter, getPath, pathValues, type Predicate } from './matcher.js';
import { SortedIndex, type Entry } from './sorted-index.js';

export type IndexSpec = {
  v: number;
  key: Doc;
  name: string;
  unique?: boolean;
  sparse?: boolean;
  expireAfterSeconds?: number;
  partialFilterExpression?: Doc;
  [k: string]: unknown;
};

/** One field of an index key; a `hashed` one holds mongod's hash of the value (hashed.ts). */
type Field = { path: string; parts: string[]; dir: 1 | -1; hashed: boolean };

export class Index {
  readonly fields: Field[];
  readonly tree: SortedIndex;
  private readonly entries = new Map<number, Entry[]>();
  private readonly partial: Predicate | undefined;
  /** Whether the key pattern is plain ascending/descending (not hashed). */
  readonly ordered: boolean;
  /** The position of the hashed field, or -1: such an index serves equality on it, never ranges or sorts. */
  readonly hashed: number;
  /** The index's collation (spec.collation, filled in at creation); undefined: binary string order. */
  readonly collator: Collator | undefined;
  /** The collator's string order, which the tree is sorted by. */
  readonly strings: StringCompare | undefined;

  constructor(readonly spec: IndexSpec) {
    this.fields = Object.entries(spec.key).map(([path, d]) => ({ path, parts: path.split('.'), dir: d === -1 || d === '-1' ? -1 : 1, hashed: d === 'hashed' }));
    this.ordered = Object.values(spec.key).every((d) => typeof d === 'number');
    this.hashed = this.fields.findIndex((f) => f.hashed);
    this.collator = spec.collation === undefined ? undefined : collatorFor(spec.collation);
    // Intl.Collator has no sort keys, so a collated index is ordered by the collator itself: lookups,
    // ranges and unique checks are comparisons in the tree, and equal under the collation is exactly
    // what ICU says, which folding strings into a normalized key (lower case, accents stripped) would
    // only approximate ('ß' and 'ss' are equal at strength 1, for one).
    const strings = this.collator?.compare;
    this.strings = strings;
    const fields = this.fields;
    this.tree = new SortedIndex((a, b) => {
      for (let i = 0; i < fields.length; i++) {
        const c = compareValues(a.key[i], b.key[i], strings);
        if (c !== 0) return c * fields[i].dir;
      }
      return a.rid - b.rid;
    });
    this.partial = spec.partialFilterExpression ? compileFilter(spec.partialFilterExpression, strings) : undefined;
  }

  /** All index keys of a document (several when a field holds an array); none if sparse/partial excludes it. */
  keysOf(doc: Doc): any[][] {
    if (this.partial && !this.partial(doc)) return [];
    if (this.hashed >= 0) return hashedIndexKeys(doc, this.fields, Boolean(this.spec.sparse));
    let keys: any[][] = [[]];
    let anyPresent = false;
    for (const f of this.fields) {
      const raw = pathValues(doc, f.parts);
      const vals: any[] = [];
      for (const v of raw) {
        if (Array.isArray(v)) {
          if (v.length === 0) vals.push(undefined);
          else for (const el of v) vals.push(el);
        } else vals.push(v);
      }
      if (vals.some((v) => v !== undefined)) anyPresent = true;
      const norm = vals.map((v) => (v === undefined ? null : v));
      const uniq = norm.length > 1 ? dedupeValues(norm) : norm;
      if (uniq.length === 1) for (const k of keys) k.push(uniq[0]);
      else keys = keys.flatMap((k) => uniq.map((v) => [...k, v]));
    }
    if (this.spec.sparse && !anyPresent) return [];
    return keys;
  }

  add(rid: number, keys: any[][]): void {
    const list = keys.map((key) => ({ key, rid }));
    for (const e of list) this.tree.insert(e);
    if (list.length > 0) this.entries.set(rid, list);
  }

  remove(rid: number): void {
    const list = this.entries.get(rid);
    if (!list) return;
    for (const e of list) this.tree.remove(e);
    this.entries.delete(rid);
  }

  /** Whether `rid` is indexed under exactly `keys` (an update that leaves this index alone). */
  hasKeys(rid: number, keys: any[][]): boolean {
    const list = this.entries.get(rid);
    if (!list) return keys.length === 0;
    if (list.length !== keys.length) return false;
    for (let j = 0; j < keys.length; j++) {
      const a = list[j].key;
      const b = keys[j];
      for (let i = 0; i < a.length; i++) {
        if (typeRank(a[i]) !== typeRank(b[i]) || compareValues(a[i], b[i]) !== 0) return false;
      }
    }
    return true;
  }

  setKeys(rid: number, keys: any[][]): void {
    if (this.hasKeys(rid, keys)) return;
    this.remove(rid);
    this.add(rid, keys);
  }

  /** A record other than `self` that already holds one of `keys`, for unique enforcement. */
  findDuplicate(keys: any[][], self: number | undefined): { rid: number; key: any[] } | undefined {
    const n = this.fields.length;
    for (const key of keys) {
      const probe = (e: Entry): number => {
        for (let i = 0; i < n; i++) {
          const c = compareValues(e.key[i], key[i], this.strings);
          if (c !== 0) return c * this.fields[i].dir;
        }
        return 0;
      };
      for (const e of this.tree.scanFrom(probe)) {
        if (probe(e) !== 0) break;
        if (e.rid !== self) return { rid: e.rid, key };
      }
    }
    return undefined;
  }

  clear(): void {
    this.tree.clear();
    this.entries.clear();
  }
}

function dedupeValues(vals: any[]): any[] {
  const seen = new Set<string>();
  const out: any[] = [];
  for (const v of vals) {
    const k = canonicalKey(v);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(v);
    }
  }
  return out;
}

export function indexNameFor(key: Doc): string {
  return Object.entries(key)
    .map(([k, v]) => `${k}_${String(v)}`)
    .join('_');
}

// ---- query planning ----

type Interval = { rank: number; lo?: any; loInc: boolean; hi?: any; hiInc: boolean };
type FieldCond = { points?: any[]; range?: Interval };

function isIndexableScalar(v: unknown): boolean {
  const r = typeRank(v);
  return r !== 5 && r !== 6 && r !== 12 && !(v instanceof RegExp) && r !== 1 && r !== 13;
}

/** Equality and range conditions of a conjunctive filter, by path; other conditions are ignored here. */
function extractConds(filter: Doc, out: Map<string, FieldCond> = new Map()): Map<string, FieldCond> {
  for (const [path, cond] of Object.entries(filter)) {
    if (path === '$and' && Array.isArray(cond)) {
      for (const sub of cond) if (isPlainObject(sub)) extractConds(sub, out);
      continue;
    }
    if (path.startsWith('$')) continue;
    const fc = out.get(path) ?? {};
    const opObj = isPlainObject(cond) && Object.keys(cond).length > 0 && Object.keys(cond).every((k) => k.startsWith('$'));
    if (!opObj) {
      if (isIndexableScalar(cond)) fc.points = [cond];
    } else {
      for (const [op, x] of Object.entries(cond as Doc)) {
        if (op === '$eq' && isIndexableScalar(x)) fc.points = [x];
        else if (op === '$in' && Array.isArray(x) && x.length > 0 && x.every(isIndexableScalar)) fc.points ??= x;
        else if ((op === '$gt' || op === '$gte' || op === '$lt' || op === '$lte') && isIndexableScalar(x) && x !== null) {
          const rank = typeRank(x);
          const r: Interval = fc.range && fc.range.rank === rank ? fc.range : { rank, loInc: true, hiInc: true };
          if (op === '$gt' || op === '$gte') {
            r.lo = x;
            r.loInc = op === '$gte';
          } else {
            r.hi = x;
            r.hiInc = op === '$lte';
          }
          fc.range = r;
        }
      }
    }
    if (fc.points || fc.range) out.set(path, fc);
  }
  return out;
}

function inInterval(v: any, r: Interval, strings: StringCompare | undefined): boolean {
  if (typeRank(v) !== r.rank) return false;
  if (r.lo !== undefined) {
    const c = compareValues(v, r.lo, strings);
    if (c < 0 || (c === 0 && !r.loInc)) return false;
  }
  if (r.hi !== undefined) {
    const c = compareValues(v, r.hi, strings);
    if (c > 0 || (c === 0 && !r.hiInc)) return false;
  }
  return true;
}

function keyMatches(v: any, fc: FieldCond, strings: StringCompare | undefined): boolean {
  if (fc.points && !fc.points.some((p) => (p === null ? v === null : typeRank(v) === typeRank(p) && compareValues(v, p, strings) === 0))) return false;
  if (fc.range && !inInterval(v, fc.range, strings)) return false;
  return true;
}

/** Whether a condition bounds strings: an index of another collation orders them differently. */
function boundsStrings(fc: FieldCond): boolean {
  return fc.range?.rank === 4 || (fc.points !== undefined && fc.points.some((p) => typeRank(p) === 4));
}

/** The value of an `_id: v` / `_id: {$eq: v}` condition on a scalar, else undefined. */
function idEquality(cond: unknown): unknown {
  if (cond === undefined) return undefined;
  if (isPlainObject(cond)) {
    const keys = Object.keys(cond);
    if (keys.length === 1 && keys[0] === '$eq' && isIndexableScalar(cond.$eq) && cond.$eq !== null) return cond.$eq;
    return undefined;
  }
  return isIndexableScalar(cond) && cond !== null ? cond : undefined;
}

export type ScanPlan = {
  index: Index;
  /** Number of leading index fields fixed by equality. */
  eqCount: number;
  prefixes: any[][];
  range: Interval | undefined;
  keyFilters: Array<[number, FieldCond]>;
};

const MAX_PREFIXES = 1000;

function planForConds(indexes: Index[], all: Map<string, FieldCond>, collator: Collator | undefined): ScanPlan | undefined {
  let best: ScanPlan | undefined;
  let bestScore = 0;
  let uncollated: Map<string, FieldCond> | undefined;
  for (const index of indexes) {
    if ((!index.ordered && index.hashed < 0) || index.spec.partialFilterExpression) continue;
    // As on mongod, an index of another collation serves no string bounds (only the others).
    const asked = sameCollation(index.collator, collator) ? all : (uncollated ??= new Map([...all].filter(([, fc]) => !boundsStrings(fc))));
    const conds = index.hashed < 0 ? asked : hashedConds(index, asked);
    let eqCount = 0;
    let combos = 1;
    for (const f of index.fields) {
      const fc = conds.get(f.path);
      if (!fc?.points) break;
      combos *= fc.points.length;
      if (combos > MAX_PREFIXES) break;
      eqCount++;
    }
    const next = index.fields[eqCount];
    const range = next ? conds.get(next.path)?.range : undefined;
    if (eqCount === 0 && !range) continue;
    // A sparse index lacks documents missing all its fields: usable only when the query requires one.
    if (index.spec.sparse && !range && !index.fields.slice(0, eqCount).some((f) => asked.get(f.path)!.points!.every((p) => p !== null))) continue;
    const complete = eqCount === index.fields.length;
    const score = eqCount * 4 + (range ? 2 : 0) + (complete && index.spec.unique ? 100 : 0) + (complete ? 1 : 0) - index.fields.length * 0.01;
    if (score <= bestScore) continue;
    let prefixes: any[][] = [[]];
    for (let i = 0; i < eqCount; i++) {
      const pts = conds.get(index.fields[i].path)!.points!;
      prefixes = prefixes.flatMap((p) => pts.map((v) => [...p, v]));
    }
    const keyFilters: Array<[number, FieldCond]> = [];
    index.fields.forEach((f, i) => {
      if (i < eqCount) return;
      const fc = conds.get(f.path);
      if (!fc) return;
      if (i === eqCount) {
        if (fc.points) keyFilters.push([i, { points: fc.points }]);
        return;
      }
      keyFilters.push([i, fc]);
    });
    best = { index, eqCount, prefixes, range, keyFilters };
    bestScore = score;
  }
  return best;
}

/**
 * The conditions a hashed index serves, in its keys' terms: equality and $in on the hashed field become
 * points on their hashes; a range on it serves nothing. Under a collation mongod hashes strings'
 * collation keys, which Intl.Collator cannot give, so this index (which hashes the strings themselves)
 * serves no string equality; those queries scan.
 */
function hashedConds(index: Index, conds: Map<string, FieldCond>): Map<string, FieldCond> {
  const path = index.fields[index.hashed].path;
  const fc = conds.get(path);
  if (!fc) return conds;
  const out = new Map(conds);
  if (fc.points && !(index.collator && fc.points.some((p) => typeRank(p) === 4))) out.set(path, { points: fc.points.map(hashKey) });
  else out.delete(path);
  return out;
}

/** Record ids produced by one scan plan, in index order (possibly repeated for multikey documents). */
/** `reverse` walks the same entries from the end (a sort opposite to the index direction). */
function* runPlan(plan: ScanPlan, stats?: QueryStats, reverse = false): Generator<number> {
  const { index, eqCount, range, keyFilters } = plan;
  const { fields, strings } = index;
  const prefixes = [...plan.prefixes].sort((a, b) => {
    for (let i = 0; i < a.length; i++) {
      const c = compareValues(a[i], b[i], strings) * fields[i].dir;
      if (c !== 0) return c;
    }
    return 0;
  });
  if (reverse) prefixes.reverse();
  const dir = eqCount < fields.length ? fields[eqCount].dir : 1;
  for (const prefix of prefixes) {
    const cmpPrefix = (e: Entry): number => {
      for (let i = 0; i < eqCount; i++) {
        const c = compareValues(e.key[i], prefix[i], strings);
        if (c !== 0) return c * fields[i].dir;
      }
      return 0;
    };
    // Before/after the range in index order (direction-aware).
    const before = (v: any): boolean => {
      if (!range) return false;
      const r = typeRank(v);
      if (dir === 1) {
        if (r !== range.rank) return r < range.rank;
        if (range.lo === undefined) return false;
        const c = compareValues(v, range.lo, strings);
        return c < 0 || (c === 0 && !range.loInc);
      }
      if (r !== range.rank) return r > range.rank;
      if (range.hi === undefined) return false;
      const c = compareValues(v, range.hi, strings);
      return c > 0 || (c === 0 && !range.hiInc);
    };
    const after = (v: any): boolean => {
      if (!range) return false;
      const r = typeRank(v);
      if (dir === 1) {
        if (r !== range.rank) return r > range.rank;
        if (range.hi === undefined) return false;
        const c = compareValues(v, range.hi, strings);
        return c > 0 || (c === 0 && !range.hiInc);
      }
      if (r !== range.rank) return r < range.rank;
      if (range.lo === undefined) return false;
      const c = compareValues(v, range.lo, strings);
      return c < 0 || (c === 0 && !range.loInc);
    };
    const probe = reverse
      ? (e: Entry): number => {
          const c = cmpPrefix(e);
          if (c !== 0) return c > 0 ? 0 : -1;
          return range && after(e.key[eqCount]) ? 0 : -1;
        }
      : (e: Entry): number => {
          const c = cmpPrefix(e);
          if (c !== 0) return c;
          return before(e.key[eqCount]) ? -1 : 0;
        };
    const scan = reverse ? index.tree.scanBackBefore(probe) : index.tree.scanFrom(probe);
    for (const e of scan) {
      if (stats) stats.keysExamined++;
      if (cmpPrefix(e) !== 0) break;
      if (range && (reverse ? before(e.key[eqCount]) : after(e.key[eqCount]))) break;
      let ok = true;
      for (const [i, fc] of keyFilters) {
        if (!keyMatches(e.key[i], fc, strings)) {
          ok = false;
          break;
        }
      }
      if (ok) yield e.rid;
    }
  }
}

export type SortSpec = Array<[string, 1 | -1]>;
export type QueryStats = { keysExamined: number; docsExamined: number };

export function parseSort(sort: Doc | undefined): SortSpec {
  if (!sort) return [];
  return Object.entries(sort)
    .filter(([, d]) => typeof d === 'number' || typeof d === 'string')
    .map(([k, d]) => [k, Number(d) === -1 ? -1 : 1]);
}

/** Sort key of a document for one field: arrays sort by their smallest (asc) or largest (desc) element. */
function sortValue(doc: Doc, path: string, dir: 1 | -1, strings: StringCompare | undefined): any {
  const v = getPath(doc, path);
  if (Array.isArray(v)) {
    if (v.length === 0) return undefined;
    return v.reduce((m, x) => (compareValues(x, m, strings) * dir < 0 ? x : m));
  }
  return v;
}

/** Document order for `sort`; `strings` is the collation's string order (binary when undefined). */
export function docComparator(sort: SortSpec, strings?: StringCompare): (a: Doc, b: Doc) => number {
  return (a, b) => {
    for (const [path, dir] of sort) {
      const c = compareValues(sortValue(a, path, dir, strings), sortValue(b, path, dir, strings), strings);
      if (c !== 0) return c * dir;
    }
    return 0;
  };
}

/** Whether scanning `plan` yields documents already in `sort` order. */
/** 1 when scanning `plan` forward yields `sort` order, -1 when scanning it backward does, else 0. */
function planSortDirection(plan: ScanPlan, sort: SortSpec, collator: Collator | undefined): 1 | -1 | 0 {
  if (sort.length === 0) return 1;
  if (plan.prefixes.length !== 1) return 0;
  // An index of another collation orders strings differently from the sort asked for.
  if (!sameCollation(plan.index.collator, collator)) return 0;
  // Sort fields fixed by the equality prefix do not change the order.
  const fixed = new Set(plan.index.fields.slice(0, plan.eqCount).map((f) => f.path));
  const effective = sort.filter(([path]) => !fixed.has(path));
  const rest = plan.index.fields.slice(plan.eqCount);
  if (effective.length > rest.length) return 0;
  if (effective.some((_, i) => rest[i].hashed)) return 0;
  if (effective.every(([path, dir], i) => rest[i].path === path && rest[i].dir === dir)) return 1;
  if (effective.every(([path, dir], i) => rest[i].path === path && rest[i].dir === -dir)) return -1;
  return 0;
}

/**
 * The index key that serves a query shape exactly: equality fields, then one range field, then the
 * remaining sort fields. Only fields of declared indexes are used; undefined when nothing is gained.
 */
function idealKey(conds: Map<string, FieldCond>, sort: SortSpec, declared: Set<string>): Doc | undefined {
  const key: Doc = {};
  const eq = [...conds].filter(([p, c]) => c.points && declared.has(p)).sort((a, b) => a[1].points!.length - b[1].points!.length);
  for (const [p] of eq) key[p] = 1;
  const ranges = [...conds].filter(([p, c]) => !c.points && c.range && declared.has(p)).map(([p]) => p);
  const rangeField = ranges.find((p) => sort[0]?.[0] === p) ?? ranges[0];
  if (rangeField) key[rangeField] = sort[0]?.[0] === rangeField ? sort[0][1] : 1;
  for (const [p, d] of sort) if (!(p in key) && declared.has(p)) key[p] = d;
  if (Object.keys(key).length < 2) return undefined;
  return key;
}

export class Collection {
  readonly docs = new Map<number, Doc>();
  /** _id (canonical form) to record id: equality on _id is the hottest lookup. */
  private readonly idMap = new Map<string, number>();
  readonly indexes: Index[] = [];
  private nextRid = 1;
  private readonly idIndex: Index;
  /** The default collation (options.collation, as `create` filled it in), which the _id index has too. */
  readonly collator: Collator | undefined;

  constructor(
    readonly db: string,
    readonly name: string,
    readonly options: Doc = {},
  ) {
    this.collator = options.collation === undefined ? undefined : collatorFor(options.collation);
    this.idIndex = new Index({ v: 2, key: { _id: 1 }, name: '_id_', ...(this.collator && { collation: this.collator.spec }) });
    this.indexes.push(this.idIndex);
  }

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  private dupError(index: Index, key: any[]): MongoError {
    const keyValue: Doc = {};
    index.fields.forEach((f, i) => (keyValue[f.path] = key[i]));
    const shown = index.fields.map((f, i) => `${f.path}: ${JSON.stringify(key[i])}`).join(', ');
    return new MongoError(11000, `E11000 duplicate key error collection: ${this.ns} index: ${index.spec.name} dup key: { ${shown} }`, 'DuplicateKey', {
      keyPattern: index.spec.key,
      keyValue,
    });
  }

  private computeKeys(doc: Doc, self: number | undefined): any[][][] {
    const all: any[][][] = [];
    for (const index of this.indexes) {
      if (index === this.idIndex) {
        // _id is immutable and unique; the hash map answers the duplicate check, or under a
        // collation (where 'a' and 'A' may be one _id) the index does.
        if (self === undefined) {
          const dup = index.collator ? index.findDuplicate([[doc._id]], undefined) !== undefined : this.idMap.has(canonicalKey(doc._id));
          if (dup) throw this.dupError(index, [doc._id]);
        }
        all.push(self === undefined ? [[doc._id]] : []);
        continue;
      }
      const keys = index.keysOf(doc);
      if (index.spec.unique && !(self !== undefined && index.hasKeys(self, keys))) {
        const dup = index.findDuplicate(keys, self);
        if (dup) throw this.dupError(index, dup.key);
      }
      all.push(keys);
    }
    return all;
  }

  /** Inserts a document (which must have an _id); throws 11000 on a unique violation. */
  insert(doc: Doc): number {
    const keys = this.computeKeys(doc, undefined);
    const rid = this.nextRid++;
    this.docs.set(rid, doc);
    this.idMap.set(canonicalKey(doc._id), rid);
    this.indexes.forEach((index, i) => index.add(rid, keys[i]));
    for (const aux of this.auxIndexes) aux.add(rid, aux.keysOf(doc));
    return rid;
  }

  replace(rid: number, doc: Doc): void {
    const keys = this.computeKeys(doc, rid);
    this.indexes.forEach((index, i) => {
      if (index !== this.idIndex) index.setKeys(rid, keys[i]);
    });
    for (const aux of this.auxIndexes) aux.setKeys(rid, aux.keysOf(doc));
    this.docs.set(rid, doc);
  }

  remove(rid: number): void {
    const doc = this.docs.get(rid);
    if (doc === undefined) return;
    for (const index of this.indexes) index.remove(rid);
    for (const aux of this.auxIndexes) aux.remove(rid);
    this.idMap.delete(canonicalKey(doc._id));
    this.docs.delete(rid);
  }

  findRidById(id: unknown): number | undefined {
    return this.idMap.get(canonicalKey(id));
  }

  addIndex(spec: IndexSpec): void {
    const index = new Index(spec);
    const seen: Array<[number, any[][]]> = [];
    for (const [rid, doc] of this.docs) seen.push([rid, index.keysOf(doc)]);
    for (const [rid, keys] of seen) {
      if (spec.unique) {
        const dup = index.findDuplicate(keys, rid);
        if (dup) {
          index.clear();
          throw this.dupError(index, dup.key);
        }
      }
      index.add(rid, keys);
    }
    this.indexes.push(index);
  }

  dropIndex(name: string): boolean {
    const i = this.indexes.findIndex((x) => x.spec.name === name);
    if (i <= 0) return false;
    this.indexes.splice(i, 1);
    return true;
  }

  /**
   * Documents matching `filter` with their record ids, in `sort` order, skip/limit applied. Index
   * scans serve the filter when it constrains an indexed prefix (a union of scans for a top-level
   * $or); scans already in sort order are merged lazily so `limit` stops them early.
   */
  query(
    filter: Doc | undefined,
    opts: { sort?: SortSpec; limit?: number; skip?: number; collator?: Collator } = {},
    stats?: QueryStats,
  ): Array<[number, Doc]> {
    const { collator } = opts;
    const strings = collator?.compare;
    const pred = compileFilter(filter, strings);
    const idValue = filter ? idEquality(filter._id) : undefined;
    // The _id map holds exact values: it answers any equality but one on a string under a collation.
    if (idValue !== undefined && (collator === undefined || typeRank(idValue) !== 4)) {
      // At most one document can match; no planning needed.
      const rid = this.idMap.get(canonicalKey(idValue));
      const doc = rid === undefined ? undefined : this.docs.get(rid);
      if (stats) stats.keysExamined++;
      if (rid === undefined || doc === undefined) return [];
      if (stats) stats.docsExamined++;
      return pred(doc) && !(opts.skip && opts.skip > 0) ? [[rid, doc]] : [];
    }
    const sort = opts.sort ?? [];
    const want = opts.limit && opts.limit > 0 ? opts.limit + (opts.skip ?? 0) : Infinity;
    let plans = this.plan(filter ?? {}, collator);
    if (!plans && sort.length > 0 && want !== Infinity) {
      // No usable condition, but an index in sort order lets `limit` stop the walk early.
      const byOrder = this.orderPlan(sort, collator);
      if (byOrder) plans = [byOrder];
    }
    const st: QueryStats = stats ?? { keysExamined: 0, docsExamined: 0 };
    const out: Array<[number, Doc]> = [];
    const seen = new Set<number>();
    const take = (rid: number): void => {
      if (seen.has(rid)) return;
      seen.add(rid);
      const doc = this.docs.get(rid);
      st.docsExamined++;
      if (doc !== undefined && pred(doc)) out.push([rid, doc]);
    };
    if (!plans) {
      for (const rid of this.docs.keys()) take(rid);
      this.sortRows(out, sort, strings);
    } else if (sort.length === 0 || plans.some((p) => planSortDirection(p, sort, collator) !== 0)) {
      const cmp = docComparator(sort, strings);
      const streams: Array<Iterator<number>> = [];
      const unsorted: number[] = [];
      for (const p of plans) {
        const direction = planSortDirection(p, sort, collator);
        if (direction !== 0) streams.push(runPlan(p, st, direction === -1));
        else for (const rid of runPlan(p, st)) unsorted.push(rid);
      }
      if (unsorted.length > 0) {
        const rows = unsorted.map((rid) => [rid, this.docs.get(rid)] as [number, Doc]).filter((r) => r[1] !== undefined);
        rows.sort((a, b) => cmp(a[1], b[1]));
        streams.push(rows.map((r) => r[0])[Symbol.iterator]());
      }
      if (streams.length === 1) {
        for (let r = streams[0].next(); !r.done; r = streams[0].next()) {
          take(r.value);
          if (out.length >= want) break;
        }
      } else {
        this.mergeStreams(streams, cmp, take, () => out.length >= want);
      }
    } else {
      for (const p of plans) for (const rid of runPlan(p, st)) take(rid);
      this.sortRows(out, sort, strings);
    }
    this.observe(filter ?? {}, sort, plans, st, out.length);
    const skip = opts.skip ?? 0;
    if (skip > 0 || want !== Infinity) return out.slice(skip, want === Infinity ? undefined : want);
    return out;
  }

  /**
   * The index a hint names, by name or key pattern; `$natural` (1 or -1) stands for insertion order.
   * BadValue as mongod answers when no index matches.
   */
  hintedIndex(hint: unknown): Index | 1 | -1 {
    if (isPlainObject(hint) && Object.keys(hint).length === 1 && '$natural' in hint) return Number(hint.$natural) < 0 ? -1 : 1;
    const found =
      typeof hint === 'string'
        ? this.indexes.find((i) => i.spec.name === hint)
        : isPlainObject(hint)
          ? this.indexes.find((i) => canonicalKey(i.spec.key) === canonicalKey(hint))
          : undefined;
    if (!found) {
      throw new MongoError(2, 'error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index', 'BadValue');
    }
    return found;
  }

  /**
   * Documents matching `filter` in the hinted index's order (insertion order for $natural), then in
   * `sort` order when one is given. A hinted sparse or partial index yields only the documents it holds, as on mongod.
   */
  queryHinted(
    filter: Doc | undefined,
    hint: unknown,
    opts: { sort?: SortSpec; limit?: number; skip?: number; collator?: Collator } = {},
  ): Array<[number, Doc]> {
    const target = this.hintedIndex(hint);
    const strings = opts.collator?.compare;
    const pred = compileFilter(filter, strings);
    let rids: number[];
    if (target === 1 || target === -1) {
      rids = [...this.docs.keys()];
      if (target === -1) rids.reverse();
    } else {
      const seen = new Set<number>();
      rids = [];
      for (const e of target.tree.scanFrom(undefined)) {
        if (!seen.has(e.rid)) {
          seen.add(e.rid);
          rids.push(e.rid);
        }
      }
    }
    const rows: Array<[number, Doc]> = [];
    for (const rid of rids) {
      const doc = this.docs.get(rid);
      if (doc !== undefined && pred(doc)) rows.push([rid, doc]);
    }
    this.sortRows(rows, opts.sort ?? [], strings);
    const skip = opts.skip ?? 0;
    return opts.limit && opts.limit > 0 ? rows.slice(skip, skip + opts.limit) : rows.slice(skip);
  }

  private sortRows(rows: Array<[number, Doc]>, sort: SortSpec, strings: StringCompare | undefined): void {
    if (sort.length === 0) return;
    const cmp = docComparator(sort, strings);
    rows.sort((a, b) => cmp(a[1], b[1]));
  }

  /** K-way merge of record-id streams that are each in sort order, stopping once `done()`. */
  private mergeStreams(streams: Array<Iterator<number>>, cmp: (a: Doc, b: Doc) => number, take: (rid: number) => void, done: () => boolean): void {
    const heads: Array<number | undefined> = streams.map((it) => {
      const r = it.next();
      return r.done ? undefined : r.value;
    });
    for (;;) {
      let bi = -1;
      let bestDoc: Doc | undefined;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i];
        if (h === undefined) continue;
        const d = this.docs.get(h);
        if (bi < 0 || (d && bestDoc && cmp(d, bestDoc) < 0)) {
          bi = i;
          bestDoc = d;
        }
      }
      if (bi < 0) return;
      take(heads[bi]!);
      if (done()) return;
      const r = streams[bi].next();
      heads[bi] = r.done ? undefined : r.value;
    }
  }

  /** Index scans that together cover every match of `filter`, or undefined for a collection scan. */
  plan(filter: Doc, collator: Collator | undefined): ScanPlan[] | undefined {
    const all = this.auxIndexes.length > 0 ? [...this.indexes, ...this.auxIndexes] : this.indexes;
    const conds = extractConds(filter);
    const direct = planForConds(all, conds, collator);
    const branches = this.branchConds(filter, conds);
    if (branches) {
      const branchPlans: ScanPlan[] = [];
      for (const merged of branches) {
        const p = planForConds(all, merged, collator);
        if (!p) {
          branchPlans.length = 0;
          break;
        }
        branchPlans.push(p);
      }
      const directScore = direct ? direct.eqCount * 4 + (direct.range ? 2 : 0) : 0;
      const branchScore = Math.min(...branchPlans.map((p) => p.eqCount * 4 + (p.range ? 2 : 0)));
      if (branchPlans.length > 0 && (!direct || branchScore >= directScore)) return branchPlans;
    }
    return direct ? [direct] : undefined;
  }

  /** A full scan of an index whose order matches `sort` (sparse and partial indexes miss documents). */
  private orderPlan(sort: SortSpec, collator: Collator | undefined): ScanPlan | undefined {
    for (const index of this.indexes) {
      if (!index.ordered || index.spec.sparse || index.spec.partialFilterExpression) continue;
      const plan: ScanPlan = { index, eqCount: 0, prefixes: [[]], range: undefined, keyFilters: [] };
      if (planSortDirection(plan, sort, collator) !== 0) return plan;
    }
    return undefined;
  }

  /** For a filter with a top-level $or: each branch's conditions combined with the shared ones. */
  private branchConds(filter: Doc, conds: Map<string, FieldCond>): Array<Map<string, FieldCond>> | undefined {
    const ors = Array.isArray(filter.$or) ? (filter.$or as Doc[]) : undefined;
    if (!ors || ors.length === 0 || !ors.every(isPlainObject)) return undefined;
    return ors.map((branch) => extractConds(branch, new Map([...conds].map(([k, v]) => [k, { ...v, range: v.range ? { ...v.range } : undefined }]))));
  }

  // ---- adaptive internal indexes ----

  /**
   * Internal indexes the planner adds when a query shape keeps examining far more index keys than it
   * returns (e.g. Agenda's claim query: its compound index puts `lockedAt` behind `nextRunAt`, so every
   * claim would walk all locked jobs). They reorder fields of declared indexes, are maintained like
   * any index, and are invisible to listIndexes.
   */
  readonly auxIndexes: Index[] = [];
  private readonly shapeMisses = new Map<string, number>();

  private observe(filter: Doc, sort: SortSpec, plans: ScanPlan[] | undefined, st: QueryStats, returned: number): void {
    if (!plans || st.keysExamined < 256 || st.keysExamined < 16 * (returned + 1) || this.auxIndexes.length >= 8) return;
    const declared = new Set(this.indexes.flatMap((i) => i.fields.map((f) => f.path)));
    const conds = extractConds(filter);
    const shapes = this.branchConds(filter, conds) ?? [conds];
    for (const shape of shapes) {
      const key = idealKey(shape, sort, declared);
      if (!key) continue;
      const sig = canonicalKey(key);
      if (this.auxIndexes.some((i) => canonicalKey(i.spec.key) === sig) || this.indexes.some((i) => canonicalKey(i.spec.key) === sig)) continue;
      const misses = (this.shapeMisses.get(sig) ?? 0) + 1;
      this.shapeMisses.set(sig, misses);
      if (misses < 3) continue;
      const index = new Index({ v: 2, key, name: `__aux_${this.auxIndexes.length}`, ...(this.collator && { collation: this.collator.spec }) });
      for (const [rid, doc] of this.docs) index.add(rid, index.keysOf(doc));
      this.auxIndexes.push(index);
    }
  }

  allDocs(): Doc[] {
    return [...this.docs.values()];
  }
}
