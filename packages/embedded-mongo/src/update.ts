// Applying update documents. The operators almost every write uses ($set, $unset, $inc, $push,
// $pull, $pullAll, $addToSet, $min, $max, $currentDate, $rename on plain dotted paths) run here directly, because
// mingo's update entry point costs ~200 µs per call, and those that compare values do so by the update's
// collation. `$[]` and `$[<id>]` paths are first rewritten into the element paths they select
// (arrayFilters evaluated here); the positional `$` and the rarer operators go to mingo, which knows no
// collation. $setOnInsert (which mingo lacks) is applied here, only when inserting.
import { Decimal128, Long, Timestamp } from 'bson';
import { update as mingoUpdate, Aggregator } from 'mingo';
import { bsonTypeName, canonicalKey, compareValues, copyFields, deepCopy, double, getField, isPlainObject, numberType, setField, toNumber, typeRank, type Doc, type NumberType, type StringCompare } from './bson-order.js';
import { comparingOperator, notWithCollation } from './collation.js';
import { compileFilter, positionalIndex } from './matcher.js';
import { MongoError } from './errors.js';
import { checkRenameDestination, checkRenames, renameDestinations, renameSource } from './rename.js';

export type UpdateDescription = { updatedFields: Doc; removedFields: string[] };
export type UpdateOutcome = { doc: Doc; modified: boolean; description: UpdateDescription | undefined };

const PUSH_MODIFIERS = new Set(['$each', '$slice', '$position', '$sort']);
/** Query operators that apply to a whole document rather than to the value at a path. */
const TOP_LEVEL_OPERATORS = new Set(['$and', '$or', '$nor', '$expr', '$where', '$comment', '$text', '$jsonSchema']);
const FAST_OPS = new Set(['$set', '$unset', '$inc', '$push', '$pull', '$pullAll', '$addToSet', '$min', '$max', '$currentDate', '$setOnInsert', '$mul', '$rename']);
/** The operators that compare values, and so strings by the update's collation (mongod's update nodes that take a collator). */
const COMPARING_OPS = ['$pull', '$pullAll', '$addToSet', '$min', '$max'];

export function isOperatorUpdate(u: Doc): boolean {
  const keys = Object.keys(u);
  return keys.length > 0 && keys[0].startsWith('$');
}

export function validateUpdate(u: unknown): void {
  if (Array.isArray(u)) return;
  if (!isPlainObject(u)) throw new MongoError(9, 'Update document must be an object', 'FailedToParse');
  const keys = Object.keys(u);
  // The first field decides, as on mongod: a replacement document may hold `$` fields further on
  // (refused when stored, see checkTopLevelNames); an operator update may hold nothing but operators.
  if (!isOperatorUpdate(u)) return;
  const ops = keys.filter((k) => k.startsWith('$'));
  if (ops.length !== keys.length) {
    throw new MongoError(9, 'Update document cannot mix operators and fields', 'FailedToParse');
  }
  for (const op of ops) {
    if (!isPlainObject(u[op])) throw new MongoError(9, `Modifiers operate on fields but we found type ${typeof u[op]} instead`, 'FailedToParse');
  }
}

const PATH_PARTS_KEPT = 4096;
const pathPartsCache = new Map<string, readonly string[]>();

/**
 * `path.split('.')`, kept per path: the same few paths come back in every update (a counter's
 * `usage.<bucket>.calls`), and looking fields up by the same part strings each time is cheaper than by
 * fresh ones (whose hashes V8 computes anew). Never modify the array returned.
 */
function pathParts(path: string): readonly string[] {
  let parts = pathPartsCache.get(path);
  if (parts === undefined) {
    if (pathPartsCache.size >= PATH_PARTS_KEPT) pathPartsCache.clear();
    parts = path.split('.');
    pathPartsCache.set(path, parts);
  }
  return parts;
}

/**
 * Sets `path` to `value`, creating missing objects on the way. With `owned`, containers on the path that
 * this update has not copied yet are copied first (copy-on-write), so the stored document it started
 * from, which change events and open cursors may still hold, never changes.
 */
function setPath(doc: Doc, path: string, value: any, owned?: Set<object>): void {
  if (!path.includes('.')) {
    setField(doc, path, value);
    return;
  }
  const parts = pathParts(path);
  let cur: any = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i];
    if (Array.isArray(cur) && !/^\d+$/.test(p)) throw cannotCreateField(p, parts[i - 1], cur);
    let next = getField(cur, p);
    if (next === undefined || next === null) {
      next = {};
      setField(cur, p, next);
      owned?.add(next);
    } else if (typeof next !== 'object' || next instanceof Date || next._bsontype !== undefined) {
      throw new MongoError(28, `Cannot create field '${parts[i + 1]}' in element {${p}: ${String(next)}}`, 'PathNotViable');
    } else if (owned) {
      next = own(cur, p, owned);
    }
    cur = next;
  }
  const last = parts[parts.length - 1];
  if (Array.isArray(cur) && !/^\d+$/.test(last)) throw cannotCreateField(last, parts[parts.length - 2], cur);
  if (Array.isArray(cur) && /^\d+$/.test(last)) {
    const idx = Number(last);
    while (cur.length < idx) cur.push(null);
  }
  setField(cur, last, value);
}

/** mongod's refusal to name a field of an array (only indexes can follow an array on a path). */
function cannotCreateField(field: string, arrayField: string, array: any[]): MongoError {
  return new MongoError(28, `Cannot create field '${field}' in element {${arrayField}: ${JSON.stringify(array)}}`, 'PathNotViable');
}

/** `parent[key]`, replaced by a shallow copy unless this update made or copied it already. */
function own(parent: any, key: string, owned: Set<object>): any {
  const v = getField(parent, key);
  if (owned.has(v) || (!Array.isArray(v) && !isPlainObject(v))) return v;
  const copy = Array.isArray(v) ? v.slice() : copyFields(v);
  setField(parent, key, copy);
  owned.add(copy);
  return copy;
}

/** The array or object at `path`, owned by this update (see setPath); undefined when there is none. */
function ownedContainer(doc: Doc, path: string, owned: Set<object> | undefined): any {
  let cur: any = doc;
  for (const p of pathParts(path)) {
    const next = getField(cur, p);
    if (!Array.isArray(next) && !isPlainObject(next)) return undefined;
    cur = owned ? own(cur, p, owned) : next;
  }
  return cur;
}

function getParentAndKey(doc: Doc, path: string): [any, string] | undefined {
  const parts = pathParts(path);
  const parent = parentOf(doc, parts);
  return parent === undefined ? undefined : [parent, parts[parts.length - 1]];
}

/** The object or array holding the last field of `parts`; undefined when a part before it is no container. */
function parentOf(doc: Doc, parts: readonly string[]): any {
  let cur: any = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    cur = getField(cur, parts[i]);
    if (cur === null || typeof cur !== 'object') return undefined;
  }
  return cur;
}

function readPath(doc: Doc, path: string): any {
  if (!path.includes('.')) return getField(doc, path);
  const parts = pathParts(path);
  const parent = parentOf(doc, parts);
  return parent === undefined ? undefined : getField(parent, parts[parts.length - 1]);
}

function unsetPath(doc: Doc, path: string, owned?: Set<object>): boolean {
  const pk = getParentAndKey(doc, path);
  if (!pk) return false;
  const [found, key] = pk;
  if (!Object.prototype.hasOwnProperty.call(found, key)) return false;
  const dot = path.lastIndexOf('.');
  const parent = dot < 0 ? doc : ownedContainer(doc, path.slice(0, dot), owned);
  if (Array.isArray(parent)) parent[Number(key)] = null;
  else delete parent[key];
  return true;
}

function isNumeric(v: unknown): boolean {
  return typeRank(v) === 3;
}

const NUMBER_WIDTH: Record<NumberType, number> = { int: 0, long: 1, double: 2, decimal: 3 };

/**
 * $inc and $mul as mongod computes them: the result has the wider of the two types (int < long <
 * double < decimal), and an int result that overflows becomes a long.
 */
function arithmetic(op: '$inc' | '$mul', a: any, b: any): any {
  const ta = numberType(a)!;
  const tb = numberType(b)!;
  const type = NUMBER_WIDTH[ta] >= NUMBER_WIDTH[tb] ? ta : tb;
  if (type === 'decimal') {
    // Through doubles (bson has no decimal arithmetic): the type is kept, digits beyond a double's are not.
    const r = op === '$inc' ? toNumber(a) + toNumber(b) : toNumber(a) * toNumber(b);
    return Decimal128.fromString(String(r));
  }
  if (type === 'double') return double(op === '$inc' ? toNumber(a) + toNumber(b) : toNumber(a) * toNumber(b));
  if (type === 'int') {
    // Two int32s: exact in a double while the result stays an int32 (a counter's every $inc); `| 0`
    // makes -0 the 0 mongod stores. Anything wider goes through BigInt below.
    const r = op === '$inc' ? a + b : a * b;
    if (r >= -(2 ** 31) && r < 2 ** 31) return r | 0;
  }
  const x = toBigInt(a);
  const y = toBigInt(b);
  const r = op === '$inc' ? x + y : x * y;
  if (type === 'int' && r >= -(2n ** 31n) && r < 2n ** 31n) return Number(r);
  if (r < -(2n ** 63n) || r >= 2n ** 63n) {
    throw new MongoError(2, `Failed to apply ${op} operations to current value ((${ta}) ${String(a)}) for document`, 'BadValue');
  }
  return Long.fromBigInt(r);
}

function toBigInt(v: any): bigint {
  return typeof v === 'number' ? BigInt(v) : (v as Long).toBigInt();
}

/** $push with its $each/$position/$sort/$slice modifiers, in MongoDB's order of application. */
function applyPush(arr: any[], items: any[], mods: Doc, strings: StringCompare | undefined): void {
  const copies = items.map(deepCopy);
  if (mods.$position !== undefined) {
    const p = Number(mods.$position);
    const at = p < 0 ? Math.max(0, arr.length + p) : Math.min(p, arr.length);
    arr.splice(at, 0, ...copies);
  } else {
    arr.push(...copies);
  }
  if (mods.$sort !== undefined) {
    const spec = mods.$sort;
    if (isPlainObject(spec)) {
      const fields = Object.entries(spec) as Array<[string, number]>;
      arr.sort((a, b) => {
        for (const [f, d] of fields) {
          const c = compareValues(getPathValue(a, f), getPathValue(b, f), strings);
          if (c !== 0) return d < 0 ? -c : c;
        }
        return 0;
      });
    } else {
      const d = Number(spec) < 0 ? -1 : 1;
      arr.sort((a, b) => compareValues(a, b, strings) * d);
    }
  }
  if (mods.$slice !== undefined) {
    // In place: keep the first n elements, or the last -n (a capped log drops from the front).
    const n = Number(mods.$slice);
    if (n >= 0) arr.length = Math.min(arr.length, n);
    else if (arr.length > -n) arr.splice(0, arr.length + n);
  }
}

function getPathValue(v: any, path: string): any {
  let cur = v;
  for (const p of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = getField(cur, p);
  }
  return cur;
}

function canFastPath(u: Doc): boolean {
  for (const [op, fields] of Object.entries(u)) {
    if (!FAST_OPS.has(op)) return false;
    for (const [path, v] of Object.entries(fields as Doc)) {
      // Positional parts are resolved before this point; other `$` parts are field names ($price).
      if (path.includes('$') && path.split('.').some((p) => p === '$' || p.startsWith('$['))) return false;
      if (op === '$push' && isPlainObject(v) && Object.keys(v).some((k) => k.startsWith('$') && !PUSH_MODIFIERS.has(k))) return false;
      if (op === '$addToSet' && isPlainObject(v) && Object.keys(v).some((k) => k.startsWith('$') && k !== '$each')) return false;
    }
  }
  return true;
}

const ARRAY_PATH_PART = /^\$\[(\w*)\]$/;

/** Whether any path of the update (or a $rename destination) holds a `$`. */
function hasDollarPath(u: Doc): boolean {
  for (const op in u) {
    const fields = u[op];
    if (!isPlainObject(fields)) continue;
    for (const path in fields) if (path.includes('$') || (op === '$rename' && String(fields[path]).includes('$'))) return true;
  }
  return false;
}

function hasArrayPaths(u: Doc): boolean {
  return Object.values(u).some((fields) => isPlainObject(fields) && Object.keys(fields).some((p) => p.includes('$[')));
}

/**
 * Rewrites `$[]` and `$[<id>]` paths into the concrete element paths they select, with the array
 * filters evaluated on the document before the update (as mongod does). The result is a plain update
 * that sets several fields of one element at once and reports concrete paths in change events.
 */
function expandArrayPaths(doc: Doc, u: Doc, arrayFilters: Doc[] | undefined, strings: StringCompare | undefined): Doc {
  const filters = new Map<string, (element: unknown) => boolean>();
  for (const f of arrayFilters ?? []) {
    const ids = filterIdentifiers(f);
    if (ids.size !== 1) throw new MongoError(9, 'Error parsing array filter: expected a single top-level field name', 'FailedToParse');
    const [id] = ids;
    if (filters.has(id)) throw new MongoError(9, `Found multiple array filters with the same top-level field name ${id}`, 'FailedToParse');
    const pred = compileFilter(f, strings);
    filters.set(id, (element) => pred({ [id]: element }));
  }
  const used = new Set<string>();
  const out: Doc = {};
  for (const [op, fields] of Object.entries(u)) {
    const next: Doc = {};
    for (const [path, v] of Object.entries(fields as Doc)) {
      const parts = path.split('.');
      if (!parts.some((p) => ARRAY_PATH_PART.test(p))) {
        next[path] = v;
        continue;
      }
      for (const p of parts) {
        const id = ARRAY_PATH_PART.exec(p)?.[1];
        if (id && !filters.has(id)) throw new MongoError(2, `No array filter found for identifier '${id}' in path '${path}'`, 'BadValue');
        if (id) used.add(id);
      }
      for (const concrete of expandPath(doc, parts, 0, '', filters)) next[concrete] = v;
    }
    out[op] = next;
  }
  for (const id of filters.keys()) {
    if (!used.has(id)) throw new MongoError(9, `The array filter for identifier '${id}' was not used in the update`, 'FailedToParse');
  }
  return out;
}

/** The identifiers an array filter names: `e` of `e.k`, also inside `$and`, `$or` and `$nor`. */
function filterIdentifiers(f: Doc, into = new Set<string>()): Set<string> {
  for (const [k, v] of Object.entries(f)) {
    if (k.startsWith('$')) {
      if (Array.isArray(v)) for (const sub of v) if (isPlainObject(sub)) filterIdentifiers(sub, into);
    } else {
      into.add(k.split('.')[0]);
    }
  }
  return into;
}

function expandPath(value: any, parts: string[], i: number, prefix: string, filters: Map<string, (element: unknown) => boolean>): string[] {
  if (i === parts.length) return [prefix];
  const join = (p: string): string => (prefix ? `${prefix}.${p}` : p);
  const m = ARRAY_PATH_PART.exec(parts[i]);
  if (!m) {
    const child = value !== null && typeof value === 'object' ? getField(value, parts[i]) : undefined;
    return expandPath(child, parts, i + 1, join(parts[i]), filters);
  }
  if (!Array.isArray(value)) throw new MongoError(2, `The path '${prefix}' must exist in the document in order to apply array updates.`, 'BadValue');
  const test = m[1] ? filters.get(m[1])! : undefined;
  const out: string[] = [];
  value.forEach((element, idx) => {
    if (!test || test(element)) out.push(...expandPath(element, parts, i + 1, join(String(idx)), filters));
  });
  return out;
}

function positionalAt(parts: string[]): number {
  return parts.indexOf('$');
}

function hasPositionalPaths(u: Doc): boolean {
  return Object.values(u).some((fields) => isPlainObject(fields) && Object.keys(fields).some((p) => p.includes('$') && positionalAt(p.split('.')) > 0));
}

/**
 * Rewrites `array.$.field` paths into `array.<i>.field`, `i` being the first element the query's
 * conditions on that array match (mongod's positional rule), so several fields of the matched element
 * (mongoose's `children.$.name` with `children.$.updatedAt`) are set together like any other paths.
 */
function resolvePositional(doc: Doc, u: Doc, filter: Doc, strings: StringCompare | undefined): Doc {
  const positions = new Map<string, number>();
  const positionOf = (arrayPath: string): number => {
    let at = positions.get(arrayPath);
    if (at === undefined) {
      at = matchedPosition(doc, arrayPath, filter, strings);
      positions.set(arrayPath, at);
    }
    return at;
  };
  const out: Doc = {};
  for (const [op, fields] of Object.entries(u)) {
    const next: Doc = {};
    for (const [path, v] of Object.entries(fields as Doc)) {
      const parts = path.split('.');
      const at = positionalAt(parts);
      if (at <= 0) {
        next[path] = v;
        continue;
      }
      if (parts.indexOf('$', at + 1) >= 0) throw new MongoError(2, `Too many positional (i.e. '$') elements found in path '${path}'`, 'BadValue');
      parts[at] = String(positionOf(parts.slice(0, at).join('.')));
      next[parts.join('.')] = v;
    }
    out[op] = next;
  }
  return out;
}

/** The index the positional `$` stands for; BadValue as mongod answers when the query did not match the array. */
function matchedPosition(doc: Doc, arrayPath: string, filter: Doc, strings: StringCompare | undefined): number {
  const at = positionalIndex(doc, arrayPath, filter, strings);
  if (at < 0) throw new MongoError(2, 'The positional operator did not find the match needed from the query.', 'BadValue');
  return at;
}

/** Whether `path` is `prefix` or a field inside it (`a.b` within `a`, not within `a.bc`). */
function sameOrWithin(path: string, prefix: string): boolean {
  return path.startsWith(prefix) && (path.length === prefix.length || path.charCodeAt(prefix.length) === 46 /* . */);
}

function checkConflicts(u: Doc): void {
  const seen: string[] = [];
  for (const [op, fields] of Object.entries(u)) {
    if (op === '$setOnInsert') continue;
    const paths = Object.keys(fields as Doc);
    if (op === '$rename') paths.push(...renameDestinations(fields as Doc));
    for (const path of paths) {
      for (const other of seen) {
        if (sameOrWithin(other, path) || sameOrWithin(path, other)) {
          throw new MongoError(40, `Updating the path '${path}' would create a conflict at '${other}'`, 'ConflictingUpdateOperators');
        }
      }
      seen.push(path);
    }
  }
}

function applyFast(
  doc: Doc,
  u: Doc,
  inserting: boolean,
  updated: Set<string>,
  removed: Set<string>,
  owned?: Set<object>,
  strings?: StringCompare,
): void {
  for (const [op, fields] of Object.entries(u)) {
    for (const [path, v] of Object.entries(fields as Doc)) {
      switch (op) {
        case '$setOnInsert':
          if (!inserting) break;
          setPath(doc, path, deepCopy(v), owned);
          updated.add(path);
          break;
        case '$set':
          setPath(doc, path, deepCopy(v), owned);
          updated.add(path);
          break;
        case '$unset':
          if (unsetPath(doc, path, owned)) removed.add(path);
          break;
        case '$rename': {
          // mongod's order: $set of the destination (in place when it exists), then $unset of the source.
          const found = renameSource(doc, path);
          if (!found) break;
          checkRenameDestination(doc, v);
          setPath(doc, v, found.value, owned);
          unsetPath(doc, path, owned);
          updated.add(v);
          removed.add(path);
          break;
        }
        case '$inc':
        case '$mul': {
          if (!isNumeric(v)) throw new MongoError(14, `Cannot ${op === '$inc' ? 'increment' : 'multiply'} with non-numeric argument: {${path}: ${String(v)}}`, 'TypeMismatch');
          const cur = readPath(doc, path);
          if (cur !== undefined && cur !== null && !isNumeric(cur)) {
            throw new MongoError(14, `Cannot apply ${op} to a value of non-numeric type. {_id: ${String(doc._id)}} has the field '${path}' of non-numeric type ${typeof cur}`, 'TypeMismatch');
          }
          if (cur === null) throw new MongoError(14, `Cannot apply ${op} to a value of non-numeric type null`, 'TypeMismatch');
          // A missing field takes the operand ($inc) or a zero of the operand's type ($mul).
          const next = cur === undefined ? (op === '$inc' ? v : arithmetic(op, 0, v)) : arithmetic(op, cur, v);
          setPath(doc, path, next, owned);
          updated.add(path);
          break;
        }
        case '$min':
        case '$max': {
          const cur = readPath(doc, path);
          const c = cur === undefined ? 0 : compareValues(v, cur, strings);
          if (cur === undefined || (op === '$min' ? c < 0 : c > 0)) {
            setPath(doc, path, deepCopy(v), owned);
            updated.add(path);
          }
          break;
        }
        case '$currentDate':
          setPath(doc, path, isPlainObject(v) && v.$type === 'timestamp' ? new Timestamp({ t: Math.floor(Date.now() / 1000), i: 1 }) : new Date(), owned);
          updated.add(path);
          break;
        case '$push':
        case '$addToSet': {
          const items: any[] = isPlainObject(v) && '$each' in v ? (v.$each as any[]) : [v];
          let cur = readPath(doc, path);
          if (cur === undefined || cur === null) {
            cur = [];
            setPath(doc, path, cur, owned);
            owned?.add(cur);
          } else if (!Array.isArray(cur)) {
            throw new MongoError(2, `The field '${path}' must be an array but is of type ${typeof cur} in document {_id: ${String(doc._id)}}`, 'BadValue');
          } else {
            cur = ownedContainer(doc, path, owned);
          }
          if (op === '$addToSet') {
            for (const item of items) if (!cur.some((x: any) => compareValues(x, item, strings) === 0)) cur.push(deepCopy(item));
          } else {
            applyPush(cur, items, isPlainObject(v) && '$each' in v ? v : {}, strings);
          }
          updated.add(path);
          break;
        }
        case '$pull': {
          const cur = readPath(doc, path);
          if (cur === undefined) break;
          if (!Array.isArray(cur)) throw new MongoError(2, 'Cannot apply $pull to a non-array value', 'BadValue');
          let keep: (x: any) => boolean;
          if (isPlainObject(v) && Object.keys(v).length > 0) {
            // mongod's rule: a condition led by an operator on the element itself ({$gte: 6}) tests each
            // element; any other document, $or/$and/$nor included, is a query on each element document.
            const first = Object.keys(v)[0];
            if (first.startsWith('$') && !TOP_LEVEL_OPERATORS.has(first)) {
              const pred = compileFilter({ x: v }, strings);
              keep = (x) => !pred({ x });
            } else {
              const pred = compileFilter(v, strings);
              keep = (x) => !(isPlainObject(x) && pred(x));
            }
          } else {
            keep = (x) => compareValues(x, v, strings) !== 0;
          }
          const next = cur.filter(keep);
          if (next.length !== cur.length) {
            setPath(doc, path, next, owned);
            updated.add(path);
          }
          break;
        }
        case '$pullAll': {
          // Removes the elements equal to one of the values, whole values compared (a regex is a value here).
          if (!Array.isArray(v)) throw new MongoError(2, `$pullAll requires an array argument but was given a ${bsonTypeName(v)}`, 'BadValue');
          const cur = readPath(doc, path);
          if (cur === undefined) break;
          if (!Array.isArray(cur)) throw new MongoError(2, 'Cannot apply $pull to a non-array value', 'BadValue');
          const next = cur.filter((x) => !v.some((y) => compareValues(x, y, strings) === 0));
          if (next.length !== cur.length) {
            setPath(doc, path, next, owned);
            updated.add(path);
          }
          break;
        }
        default:
          throw new MongoError(9, `Unknown modifier: ${op}`, 'FailedToParse');
      }
    }
  }
}

/**
 * Applies `u` to a copy of `original` and reports what changed. `filter` feeds the positional `$`
 * operator, `inserting` enables $setOnInsert; `strings` (the operation's collation) is how the
 * positional `$` and array filters match strings.
 */
export function applyUpdate(
  original: Doc,
  u: Doc | Doc[],
  opts: { filter?: Doc; arrayFilters?: Doc[]; inserting?: boolean; strings?: StringCompare },
): UpdateOutcome {
  if (Array.isArray(u)) {
    const comparing = opts.strings && comparingOperator(u);
    if (comparing) throw notWithCollation(`${comparing} in an update pipeline`);
    const [out] = new Aggregator(u, {}).run([deepCopy(original)]) as Doc[];
    const doc = out ?? {};
    if (original._id !== undefined) doc._id = original._id;
    // An update event, as MongoDB 5.0+ reports a pipeline update (not a replace): its changed fields.
    return finish(original, doc, describeChange(original, doc));
  }
  if (!isOperatorUpdate(u)) {
    if (!opts.inserting) checkTopLevelNames(Object.keys(u));
    const doc: Doc = { _id: original._id, ...deepCopy(u) };
    if (doc._id === undefined) delete doc._id;
    if (u._id !== undefined && original._id !== undefined && compareValues(u._id, original._id) !== 0) {
      throw new MongoError(66, "After applying the update, the (immutable) field '_id' was found to have been altered", 'ImmutableField');
    }
    return finish(original, doc, undefined);
  }
  if (u.$rename !== undefined) checkRenames(u.$rename);
  for (const op of Object.keys(u)) {
    const paths = op === '$rename' ? [...Object.keys(u[op]), ...renameDestinations(u[op])] : Object.keys(u[op] as Doc);
    for (const path of paths) {
      if ((path === '_id' || path.startsWith('_id.')) && op !== '$setOnInsert' && !(opts.inserting && op === '$set')) {
        if (!(op === '$set' && compareValues(u[op][path], original._id) === 0)) {
          throw new MongoError(66, "Performing an update on the path '_id' would modify the immutable field '_id'", 'ImmutableField');
        }
      }
      if (path === '') throw new MongoError(56, 'An empty update path is not valid.', 'EmptyFieldName');
    }
  }
  if (!opts.inserting) {
    // Fields an operator writes ($unset only removes; $setOnInsert writes nothing here). Only a path
    // led by `$` can break the rule, so the common update skips building the list.
    if (hasDollarPath(u)) {
      const written = Object.entries(u)
        .filter(([op]) => op !== '$unset' && op !== '$setOnInsert')
        .map(([op, fields]) => (op === '$rename' ? renameDestinations(fields as Doc) : Object.keys(fields as Doc)));
      if (written.some((paths) => paths.some((p) => p.startsWith('$')))) checkTopLevelNames(written.flat().map((p) => p.split('.')[0]));
    }
  }
  let arrayFilters = opts.arrayFilters;
  // Expanded also without `$[` paths: array filters the update does not use are refused, as mongod does.
  if (hasArrayPaths(u) || (arrayFilters !== undefined && arrayFilters.length > 0)) {
    u = expandArrayPaths(original, u, arrayFilters, opts.strings);
    arrayFilters = undefined;
  }
  if (hasPositionalPaths(u)) u = resolvePositional(original, u, opts.filter ?? {}, opts.strings);
  checkConflicts(u);
  const updated = new Set<string>();
  const removed = new Set<string>();
  if (canFastPath(u)) {
    // Copy-on-write: only the containers on updated paths are copied, not the whole document.
    const doc = copyFields(original);
    applyFast(doc, u, Boolean(opts.inserting), updated, removed, new Set<object>([doc]), opts.strings);
    const modified = removed.size > 0 || [...updated].some((p) => !samePathValue(original, doc, p));
    return { doc, modified, description: describe(doc, updated, removed) };
  }
  // The rarer operators ($pop, $bit, unusual modifiers) send the update to mingo, which compares
  // binary; its $setOnInsert and $rename still run here (mingo has no $setOnInsert and refuses a
  // `__proto__` path).
  const sortsPush = isPlainObject(u.$push) && Object.values(u.$push).some((v) => isPlainObject(v) && '$sort' in v);
  const comparing = opts.strings && (COMPARING_OPS.find((op) => op in u) ?? (sortsPush ? '$push with $sort' : undefined));
  if (comparing) throw notWithCollation(`${comparing} together with ${Object.keys(u).filter((op) => !FAST_OPS.has(op)).join(', ') || 'this update'}`);
  const doc = deepCopy(original);
  const { $setOnInsert, $rename, ...rest } = u;
  if ($setOnInsert && opts.inserting) applyFast(doc, { $set: $setOnInsert }, true, updated, removed);
  if ($rename) applyFast(doc, { $rename }, false, updated, removed);
  try {
    const paths = mingoUpdate(doc, rest as any, arrayFilters, opts.filter as any, { cloneMode: 'deep' });
    for (const p of paths) updated.add(p);
  } catch (e) {
    throw new MongoError(2, (e as Error).message, 'BadValue');
  }
  return finish(original, doc, describe(doc, updated, removed));
}

/**
 * mongod's storage rule for a document an update writes (an upsert's insert excepted): a top-level
 * field name may not start with `$` unless it belongs to a DBRef ($ref, $id, $db in that order).
 * https://www.mongodb.com/docs/manual/core/dot-dollar-considerations/dollar-prefix/
 */
function checkTopLevelNames(names: string[]): void {
  names.forEach((name, i) => {
    if (!name.startsWith('$')) return;
    const dbref =
      (name === '$ref' && names[i + 1] === '$id') || (name === '$id' && names[i - 1] === '$ref') || (name === '$db' && names[i - 1] === '$id');
    if (dbref) return;
    throw new MongoError(
      52,
      `The dollar ($) prefixed field '${name}' in '${name}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
      'DollarPrefixedFieldName',
    );
  });
}

function describe(doc: Doc, updated: Set<string>, removed: Set<string>): UpdateDescription {
  const description: UpdateDescription = { updatedFields: {}, removedFields: [...removed] };
  for (const p of updated) {
    const topish = p.includes('.$') ? p.replace(/\.\$(\[[^\]]*\])?/g, '') : p;
    setField(description.updatedFields, topish, readPath(doc, topish));
  }
  return description;
}

/** Whether `path` holds the same value (type, value and field order) in both documents. */
function samePathValue(a: Doc, b: Doc, path: string): boolean {
  const x = readPath(a, path);
  const y = readPath(b, path);
  if (x === undefined || y === undefined) return x === y;
  return compareValues(x, y) === 0 && sameKeyOrder(x, y);
}

function sameKeyOrder(x: any, y: any): boolean {
  if (Array.isArray(x)) return x.every((v, i) => sameKeyOrder(v, y[i]));
  if (!isPlainObject(x)) return true;
  const kx = Object.keys(x);
  const ky = Object.keys(y);
  return kx.length === ky.length && kx.every((k, i) => k === ky[i] && sameKeyOrder(x[k], y[k]));
}

/** The top-level fields a pipeline update set or removed, for its change event. */
export function describeChange(before: Doc, after: Doc): UpdateDescription {
  const updatedFields: Doc = {};
  for (const [key, value] of Object.entries(after)) {
    if (!(key in before) || canonicalKey(before[key]) !== canonicalKey(value)) updatedFields[key] = value;
  }
  return { updatedFields, removedFields: Object.keys(before).filter((key) => !(key in after)) };
}

function finish(original: Doc, doc: Doc, description: UpdateDescription | undefined): UpdateOutcome {
  const modified = compareValues(original, doc) !== 0 || Object.keys(original).join() !== Object.keys(doc).join();
  return { doc, modified, description };
}

/** The document an upsert starts from: the equality fields of the filter (MongoDB's seeding rule). */
export function seedFromFilter(filter: Doc): Doc {
  const seed: Doc = {};
  const visit = (f: Doc): void => {
    for (const [k, v] of Object.entries(f)) {
      if (k === '$and' && Array.isArray(v)) {
        for (const sub of v) if (isPlainObject(sub)) visit(sub);
        continue;
      }
      if (k.startsWith('$')) continue;
      if (isPlainObject(v) && Object.keys(v).some((x) => x.startsWith('$'))) {
        if ('$eq' in v) setPath(seed, k, deepCopy(v.$eq));
        continue;
      }
      if (v instanceof RegExp || typeRank(v) === 12) continue;
      setPath(seed, k, deepCopy(v));
    }
  };
  visit(filter);
  return seed;
}
