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

export function compileProjection(projection: Doc | undefined, filter: Doc | undefined): Projector | undefined {
  if (!projection || Object.keys(projection).length === 0) return undefined;
  const entries = Object.entries(projection);
  const simple = entries.every(([k, v]) => !k.includes('$') && (typeof v === 'number' || typeof v === 'boolean'));
  if (!simple) {
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
