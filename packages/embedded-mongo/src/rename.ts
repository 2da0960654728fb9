// $rename as mongod's rename node applies it (src/mongo/db/update/rename_node.cpp): the checks on the
// update itself, and the walks that find the source and refuse a path through an array. The move is a
// $set of the destination and an $unset of the source, which update.ts makes. It runs here rather than
// in mingo, which refuses a `__proto__` path that mongod renames like any other field name.
import { bsonText, getField, isPlainObject, type Doc } from './bson-order.js';
import { MongoError } from './errors.js';

const DYNAMIC_PART = /^\$(\[\w*\])?$/;

/** Refuses a $rename mongod refuses before it reads a document (BadValue, 2). */
export function checkRenames(fields: Doc): void {
  for (const [from, to] of Object.entries(fields)) {
    if (typeof to !== 'string') throw new MongoError(2, `The 'to' field for $rename must be a string: ${from}: ${bsonText(to)}`, 'BadValue');
    if (to.includes('\0')) throw new MongoError(2, "The 'to' field for $rename cannot contain an embedded null byte", 'BadValue');
    checkPath(to);
    const spec = `${from}: ${bsonText(to)}`;
    if (from === to) throw new MongoError(2, `The source and target field for $rename must differ: ${spec}`, 'BadValue');
    if (to.startsWith(`${from}.`) || from.startsWith(`${to}.`)) {
      throw new MongoError(2, `The source and target field for $rename must not be on the same path: ${spec}`, 'BadValue');
    }
    if (from.split('.').some((p) => DYNAMIC_PART.test(p))) throw new MongoError(2, `The source field for $rename may not be dynamic: ${from}`, 'BadValue');
    if (to.split('.').some((p) => DYNAMIC_PART.test(p))) throw new MongoError(2, `The destination field for $rename may not be dynamic: ${to}`, 'BadValue');
  }
}

function checkPath(path: string): void {
  if (path === '') throw new MongoError(56, 'An empty update path is not valid.', 'EmptyFieldName');
  if (path.split('.').includes('')) throw new MongoError(56, `The update path '${path}' contains an empty field name, which is not allowed.`, 'EmptyFieldName');
}

/** The value at `from`, or undefined when it is missing (the rename is then a no-op). */
export function renameSource(doc: Doc, from: string): { value: unknown } | undefined {
  const parts = from.split('.');
  let cur: any = doc;
  let name = '';
  // The innermost array on the way, which mongod names (the renamed value itself may be an array).
  let arrayField: string | undefined;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (i > 0 && Array.isArray(cur)) {
      if (!/^\d+$/.test(part)) throw notViable(part, from, name, cur);
      arrayField = name;
    } else if (i > 0 && !isPlainObject(cur)) {
      throw notViable(part, from, name, cur);
    }
    const next = Array.isArray(cur) ? cur[Number(part)] : getField(cur, part);
    if (next === undefined) return undefined;
    name = part;
    cur = next;
  }
  if (arrayField !== undefined) {
    throw new MongoError(2, `The source field cannot be an array element, '${from}' in doc with ${idText(doc)} has an array field called '${arrayField}'`, 'BadValue');
  }
  return { value: cur };
}

/** Refuses a destination inside an array element (one overwritten whole may be an array). */
export function checkRenameDestination(doc: Doc, to: string): void {
  const parts = to.split('.');
  let cur: any = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    const next = isPlainObject(cur) ? getField(cur, parts[i]) : undefined;
    if (Array.isArray(next)) {
      throw new MongoError(2, `The destination field cannot be an array element, '${to}' in doc with ${idText(doc)} has an array field called '${parts[i]}'`, 'BadValue');
    }
    if (!isPlainObject(next)) return;
    cur = next;
  }
}

/** The fields a $rename writes: its destinations (for conflict and field-name checks). */
export function renameDestinations(fields: Doc): string[] {
  return Object.values(fields).map(String);
}

function idText(doc: Doc): string {
  return doc._id === undefined ? 'no id' : `_id: ${bsonText(doc._id)}`;
}

function notViable(part: string, path: string, name: string, value: unknown): MongoError {
  return new MongoError(28, `cannot use the part (${part} of ${path}) to traverse the element ({${name}: ${bsonText(value)}})`, 'PathNotViable');
}
