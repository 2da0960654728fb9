// find/findAndModify projections. Plain inclusion and exclusion (mongoose `select`, `select: false`)
// are applied here; projection operators ($slice, $elemMatch, positional `$`, expressions) go to mingo.
import { Query } from 'mingo';
import { isPlainObject, type Doc } from './bson-order.js';
import { MongoError } from './errors.js';

type Tree = { [k: string]: Tree | true };

export type Projector = (doc: Doc) => Doc;

function buildTree(paths: string[]): Tree {
  const root: Tree = {};
  for (const p of paths) {
    const parts = p.split('.');
    let node = root;
    for (let i = 0; i < parts.length; i++) {
      const last = i === parts.length - 1;
      const cur = node[parts[i]];
      if (last) node[parts[i]] = true;
      else {
        if (cur === true) break;
        if (!cur) node[parts[i]] = {};
        node = node[parts[i]] as Tree;
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
    const t = tree[k];
    if (t === undefined) continue;
    if (t === true) out[k] = v[k];
    else {
      const sub = include(v[k], t);
      if (sub !== undefined) out[k] = sub;
    }
  }
  return out;
}

function exclude(v: any, tree: Tree): any {
  if (Array.isArray(v)) return v.map((x) => (isPlainObject(x) || Array.isArray(x) ? exclude(x, tree) : x));
  if (!isPlainObject(v)) return v;
  const out: Doc = {};
  for (const k of Object.keys(v)) {
    const t = tree[k];
    if (t === true) continue;
    out[k] = t === undefined ? v[k] : exclude(v[k], t);
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
  if (!(key in v)) return v;
  const out: Doc = { ...v };
  const inner = v[key];
  out[key] = depth === slice.path.length - 1 ? (Array.isArray(inner) ? sliceArray(inner, slice) : inner) : applySlice(inner, slice, depth + 1);
  return out;
}

export function compileProjection(projection: Doc | undefined, filter: Doc | undefined): Projector | undefined {
  if (!projection || Object.keys(projection).length === 0) return undefined;
  const slices: Slice[] = [];
  const plain: Doc = {};
  for (const [k, v] of Object.entries(projection)) {
    const slice = parseSlice(k, v);
    if (slice) slices.push(slice);
    else plain[k] = v;
  }
  if (slices.length > 0 && isSimple(plain)) {
    // $slice with plain fields: an inclusion projection also includes the sliced fields; otherwise
    // (exclusions or nothing else) every other field stays.
    const inclusive = Object.entries(plain).some(([k, v]) => k !== '_id' && Boolean(v));
    if (inclusive) for (const s of slices) plain[s.path.join('.')] = 1;
    const base = Object.keys(plain).length > 0 ? compileProjection(plain, filter)! : (doc: Doc) => doc;
    return (doc) => slices.reduce((out, s) => applySlice(out, s), base(doc));
  }
  const entries = Object.entries(projection);
  if (!isSimple(projection)) {
    const q = new Query(filter ?? {}, {});
    return (doc) => {
      const [out] = q.find([doc], projection).all() as Doc[];
      return out ?? {};
    };
  }
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
