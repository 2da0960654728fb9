// find/findAndModify projections. Plain inclusion and exclusion (mongoose `select`, `select: false`),
// $slice, $elemMatch and the positional `$` are applied here; other projection operators and
// expressions go to mingo.
import { Query } from 'mingo';
import { getField, isPlainObject, setField, type Doc } from './bson-order.js';
import { MongoError } from './errors.js';
import { compileElementMatch, getPath, positionalIndex } from './matcher.js';

type Tree = { [k: string]: Tree | true };

export type Projector = (doc: Doc) => Doc;

function buildTree(paths: string[]): Tree {
  const root: Tree = {};
  for (const p of paths) {
    const parts = p.split('.');
    let node = root;
    for (let i = 0; i < parts.length; i++) {
      const last = i === parts.length - 1;
      const cur = getField(node, parts[i]);
      if (last) setField(node, parts[i], true);
      else {
        if (cur === true) break;
        if (!cur) setField(node, parts[i], {});
        node = getField(node, parts[i]) as Tree;
      }
    }
  }
  return root;
}

function include(v: any, tree: Tree): any {
  if (Array.isArray(v)) return v.filter((x) => isPlainObject(x) || Array.isArray(x)).map((x) => include(x, tree));
  if (!isPlainObject(v)) return undefined;
  const out: Doc = {};
  for (const k of Object.keys(v)) {
    const t = getField(tree, k);
    if (t === undefined) continue;
    if (t === true) setField(out, k, v[k]);
    else {
      const sub = include(v[k], t);
      if (sub !== undefined) setField(out, k, sub);
    }
  }
  return out;
}

function exclude(v: any, tree: Tree): any {
  if (Array.isArray(v)) return v.map((x) => (isPlainObject(x) || Array.isArray(x) ? exclude(x, tree) : x));
  if (!isPlainObject(v)) return v;
  const out: Doc = {};
  for (const k of Object.keys(v)) {
    const t = getField(tree, k);
    if (t === true) continue;
    setField(out, k, t === undefined ? v[k] : exclude(v[k], t));
  }
  return out;
}

type Slice = { path: string[]; skip: number | undefined; limit: number };

/** `{ $slice: n }` or `{ $slice: [skip, limit] }` with numbers: the common case, kept off mingo. */
function parseSlice(path: string, v: unknown): Slice | undefined {
  if (!isPlainObject(v) || Object.keys(v).length !== 1 || !('$slice' in v) || path.includes('$')) return undefined;
  const arg = v.$slice;
  const num = (x: unknown): number | undefined => (typeof x === 'number' && Number.isInteger(x) ? x : undefined);
  if (num(arg) !== undefined) return { path: path.split('.'), skip: undefined, limit: num(arg)! };
  if (Array.isArray(arg) && arg.length === 2 && num(arg[0]) !== undefined && num(arg[1]) !== undefined) {
    if (num(arg[1])! <= 0) throw new MongoError(28724, 'Second argument to $slice must be a positive number', 'Location28724');
    return { path: path.split('.'), skip: num(arg[0]), limit: num(arg[1])! };
  }
  return undefined;
}

function sliceArray(a: unknown[], { skip, limit }: Slice): unknown[] {
  if (skip === undefined) return limit >= 0 ? a.slice(0, limit) : a.slice(Math.max(0, a.length + limit));
  const start = skip >= 0 ? Math.min(skip, a.length) : Math.max(0, a.length + skip);
  return a.slice(start, start + limit);
}

/** The document with one array sliced; objects on the path are copied, the stored ones never change. */
function applySlice(v: any, slice: Slice, depth = 0): any {
  if (Array.isArray(v)) return depth === 0 ? v : v.map((x) => (isPlainObject(x) ? applySlice(x, slice, depth) : x));
  if (!isPlainObject(v)) return v;
  const key = slice.path[depth];
  const inner = getField(v, key);
  if (inner === undefined) return v;
  const out: Doc = { ...v };
  setField(out, key, depth === slice.path.length - 1 ? (Array.isArray(inner) ? sliceArray(inner, slice) : inner) : applySlice(inner, slice, depth + 1));
  return out;
}

/**
 * `{field: {$elemMatch: q}}` and `{'array.$': 1}` beside plain fields, as mongod applies them: the
 * positional field keeps its place holding the element the query matched; an $elemMatch field holds
 * the first element q matches (and is left out when none does), after the other fields.
 */
function compileArrayOperators(plain: Doc, elemMatches: Array<[string, unknown]>, positional: string[], filter: Doc): Projector {
  if (positional.length > 1) throw new MongoError(31276, 'Cannot specify more than one positional projection per query.', 'Location31276');
  const exclusive = Object.entries(plain).some(([k, v]) => k !== '_id' && !v);
  if (positional.length > 0 && exclusive) throw new MongoError(31395, 'positional projection cannot be used with exclusion', 'Location31395');
  let base: Projector;
  if (exclusive) base = compileProjection(plain, filter)!;
  else {
    const paths = [...Object.keys(plain).filter((k) => k !== '_id' && Boolean(plain[k])), ...positional];
    if (plain._id === undefined || Boolean(plain._id)) paths.push('_id');
    const tree = buildTree(paths);
    base = (doc) => include(doc, tree);
  }
  const tests = elemMatches.map(([field, q]) => [field, compileElementMatch(q)] as const);
  return (doc) => {
    const out = base(doc);
    for (const path of positional) {
      const array = getPath(doc, path);
      if (!Array.isArray(array)) continue;
      const at = positionalIndex(doc, path, filter);
      if (at < 0) {
        throw new MongoError(51246, "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array", 'Location51246');
      }
      replacePath(out, path.split('.'), [array[at]]);
    }
    for (const [field, test] of tests) {
      delete out[field];
      const array = getField(doc, field);
      const found = Array.isArray(array) ? array.findIndex(test) : -1;
      if (found >= 0) setField(out, field, [array[found]]);
    }
    return out;
  };
}

/** Sets the field at `parts` in a projected document (whose containers the projection built). */
function replacePath(doc: Doc, parts: string[], value: unknown): void {
  let cur: any = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    cur = getField(cur, parts[i]);
    if (!isPlainObject(cur)) return;
  }
  setField(cur, parts[parts.length - 1], value);
}

const PLAIN_KEPT = 1024;
const plainProjections = new Map<string, Projector>();

/**
 * A projection of plain inclusions or exclusions (every write's `fields`, most finds'), compiled once
 * per shape: its fields and whether each is on. Names cannot hold NUL (BSON), so NUL ends each name.
 */
function plainProjectionKey(projection: Doc): string | undefined {
  let key = '';
  for (const k in projection) {
    const v = projection[k];
    if ((typeof v !== 'number' && typeof v !== 'boolean') || k.includes('$')) return undefined;
    key += k + (v ? '\u0000+' : '\u0000-');
  }
  return key;
}

export function compileProjection(projection: Doc | undefined, filter: Doc | undefined): Projector | undefined {
  if (!projection || Object.keys(projection).length === 0) return undefined;
  const key = plainProjectionKey(projection);
  if (key === undefined) return compileAny(projection, filter);
  let project = plainProjections.get(key);
  if (project === undefined) {
    project = compileAny(projection, filter)!;
    if (plainProjections.size >= PLAIN_KEPT) plainProjections.clear();
    plainProjections.set(key, project);
  }
  return project;
}

function compileAny(projection: Doc, filter: Doc | undefined): Projector | undefined {
  const slices: Slice[] = [];
  const plain: Doc = {};
  const elemMatches: Array<[string, unknown]> = [];
  const positional: string[] = [];
  for (const [k, v] of Object.entries(projection)) {
    const slice = parseSlice(k, v);
    if (slice) slices.push(slice);
    else if (isPlainObject(v) && Object.keys(v).length === 1 && '$elemMatch' in v) {
      if (k.includes('.')) throw new MongoError(31275, 'Cannot use $elemMatch projection on a nested field.', 'Location31275');
      elemMatches.push([k, v.$elemMatch]);
    } else if (k.endsWith('.$') && !k.slice(0, -2).includes('$') && (typeof v === 'number' || typeof v === 'boolean') && Boolean(v)) {
      positional.push(k.slice(0, -2));
    } else setField(plain, k, v);
  }
  if ((elemMatches.length > 0 || positional.length > 0) && slices.length === 0 && isSimple(plain)) {
    return compileArrayOperators(plain, elemMatches, positional, filter ?? {});
  }
  if (elemMatches.length > 0 || positional.length > 0) return mingoProjection(projection, filter);
  if (slices.length > 0 && isSimple(plain)) {
    // $slice with plain fields: an inclusion projection also includes the sliced fields; otherwise
    // (exclusions or nothing else) every other field stays.
    const inclusive = Object.entries(plain).some(([k, v]) => k !== '_id' && Boolean(v));
    if (inclusive) for (const s of slices) plain[s.path.join('.')] = 1;
    const base = Object.keys(plain).length > 0 ? compileProjection(plain, filter)! : (doc: Doc) => doc;
    return (doc) => slices.reduce((out, s) => applySlice(out, s), base(doc));
  }
  const entries = Object.entries(projection);
  if (!isSimple(projection)) return mingoProjection(projection, filter);
  const idSetting = projection._id;
  const fields = entries.filter(([k]) => k !== '_id');
  const inclusive = fields.filter(([, v]) => Boolean(v));
  const exclusive = fields.filter(([, v]) => !v);
  if (inclusive.length > 0 && exclusive.length > 0) {
    throw new MongoError(31254, `Cannot do exclusion on field ${exclusive[0][0]} in inclusion projection`, 'Location31254');
  }
  if (inclusive.length > 0 || (fields.length === 0 && idSetting !== undefined && Boolean(idSetting))) {
    const paths = inclusive.map(([k]) => k);
    if (idSetting === undefined || Boolean(idSetting)) paths.push('_id');
    const tree = buildTree(paths);
    return (doc) => include(doc, tree);
  }
  const paths = exclusive.map(([k]) => k);
  if (idSetting !== undefined && !idSetting) paths.push('_id');
  const tree = buildTree(paths);
  return (doc) => exclude(doc, tree);
}

function isSimple(projection: Doc): boolean {
  return Object.entries(projection).every(([k, v]) => !k.includes('$') && (typeof v === 'number' || typeof v === 'boolean'));
}

function mingoProjection(projection: Doc, filter: Doc | undefined): Projector {
  const q = new Query(filter ?? {}, {});
  return (doc) => {
    const [out] = q.find([doc], projection).all() as Doc[];
    return out ?? {};
  };
}
