// $rename (src/rename.ts through src/update.ts), one row per case with the result mongod gives:
// https://www.mongodb.com/docs/manual/reference/operator/update/rename/ and the refusals of mongod's
// rename node (src/mongo/db/update/rename_node.cpp).
import { describe, expect, it } from 'vitest';
import type { Doc } from '../../src/bson-order.js';
import { MongoError } from '../../src/errors.js';
import { applyUpdate } from '../../src/update.js';

describe('$rename', () => {
  const rows: Array<{ name: string; before: Doc; update: Doc; after: Doc; removed?: string[] }> = [
    { name: 'a new field goes last', before: { _id: 1, a: 1, b: 2 }, update: { $rename: { a: 'c' } }, after: { _id: 1, b: 2, c: 1 }, removed: ['a'] },
    { name: 'an existing destination is replaced in place', before: { _id: 1, b: 2, a: 1 }, update: { $rename: { a: 'b' } }, after: { _id: 1, b: 1 } },
    { name: 'out of an embedded document', before: { _id: 1, a: { b: 1, c: 2 } }, update: { $rename: { 'a.b': 'd' } }, after: { _id: 1, a: { c: 2 }, d: 1 } },
    { name: 'into a new embedded document', before: { _id: 1, a: 1 }, update: { $rename: { a: 'x.y' } }, after: { _id: 1, x: { y: 1 } } },
    { name: 'an array value moves whole', before: { _id: 1, a: [1, 2] }, update: { $rename: { a: 'b' } }, after: { _id: 1, b: [1, 2] } },
    { name: 'a missing source changes nothing', before: { _id: 1, a: 1 }, update: { $rename: { z: 'b' } }, after: { _id: 1, a: 1 } },
    { name: 'a missing array element changes nothing', before: { _id: 1, a: [1] }, update: { $rename: { 'a.3': 'b' } }, after: { _id: 1, a: [1] } },
    { name: 'with $set on another field', before: { _id: 1, a: 1 }, update: { $rename: { a: 'b' }, $set: { c: 3 } }, after: { _id: 1, b: 1, c: 3 } },
    { name: 'with $pop, which mingo applies', before: { _id: 1, a: 1, l: [1, 2] }, update: { $rename: { a: 'b' }, $pop: { l: 1 } }, after: { _id: 1, l: [1], b: 1 } },
  ];
  it.each(rows)('$name', ({ before, update, after, removed }) => {
    const frozen = structuredClone(before);
    const out = applyUpdate(before, update, {});
    expect(out.doc).toEqual(after);
    expect(Object.keys(out.doc)).toEqual(Object.keys(after));
    expect(before).toEqual(frozen);
    if (removed) expect(out.description?.removedFields).toEqual(removed);
  });

  const refusals: Array<{ name: string; before: Doc; update: Doc; code: number; message: string }> = [
    { name: 'a destination that is not a string', before: { _id: 1, a: 1 }, update: { $rename: { a: 1 } }, code: 2, message: "The 'to' field for $rename must be a string: a: 1" },
    { name: 'the same field', before: { _id: 1, a: 1 }, update: { $rename: { a: 'a' } }, code: 2, message: 'The source and target field for $rename must differ: a: "a"' },
    { name: 'a field into itself', before: { _id: 1, a: 1 }, update: { $rename: { a: 'a.b' } }, code: 2, message: 'The source and target field for $rename must not be on the same path: a: "a.b"' },
    { name: 'a positional source', before: { _id: 1, a: [1] }, update: { $rename: { 'a.$': 'b' } }, code: 2, message: 'The source field for $rename may not be dynamic: a.$' },
    { name: 'an all-elements destination', before: { _id: 1, a: 1 }, update: { $rename: { a: 'b.$[]' } }, code: 2, message: 'The destination field for $rename may not be dynamic: b.$[]' },
    { name: 'a source inside an array', before: { _id: 1, a: [{ b: 1 }] }, update: { $rename: { 'a.0.b': 'c' } }, code: 2, message: "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'" },
    { name: 'a destination inside an array', before: { _id: 1, a: 1, l: [{}] }, update: { $rename: { a: 'l.0.b' } }, code: 2, message: "The destination field cannot be an array element, 'l.0.b' in doc with _id: 1 has an array field called 'l'" },
    { name: 'a source path through a number', before: { _id: 1, a: 5 }, update: { $rename: { 'a.b': 'c' } }, code: 28, message: 'cannot use the part (b of a.b) to traverse the element ({a: 5})' },
    { name: 'renaming _id', before: { _id: 1 }, update: { $rename: { _id: 'b' } }, code: 66, message: "would modify the immutable field '_id'" },
    { name: 'renaming onto _id', before: { _id: 1, a: 2 }, update: { $rename: { a: '_id' } }, code: 66, message: "would modify the immutable field '_id'" },
    { name: 'a destination another operator writes', before: { _id: 1, a: 1 }, update: { $rename: { a: 'b' }, $set: { b: 2 } }, code: 40, message: "would create a conflict at 'b'" },
    { name: 'an empty destination field name', before: { _id: 1, a: 1 }, update: { $rename: { a: 'b.' } }, code: 56, message: 'contains an empty field name' },
  ];
  it.each(refusals)('refuses $name', ({ before, update, code, message }) => {
    let caught: unknown;
    try {
      applyUpdate(before, update, {});
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(MongoError);
    expect((caught as MongoError).code).toBe(code);
    expect((caught as MongoError).message).toContain(message);
  });
});

describe('$rename and __proto__', () => {
  // mongod renames to any field name; here a `__proto__` destination is stored as an own field through
  // setField and never reaches JavaScript's Object.prototype.
  it.each(['__proto__', '__proto__x', '__proto__.polluted', 'constructor.prototype.polluted'])('to %s stores a field and leaves Object.prototype alone', (to) => {
    const out = applyUpdate({ _id: 1, a: { polluted: 1 }, b: 2 }, { $rename: { a: to } }, {});
    const top = to.split('.')[0];
    expect(({} as Doc).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
    expect(Object.getPrototypeOf(out.doc)).toBe(Object.prototype);
    expect(Object.keys(out.doc)).toEqual(['_id', 'b', top]);
    expect(Object.getOwnPropertyDescriptor(out.doc, top)?.value).toBeDefined();
    expect(out.description?.updatedFields).toHaveProperty([to]);
  });

  it('from a stored __proto__ field', () => {
    const before = JSON.parse('{"_id": 1, "__proto__": {"x": 1}}') as Doc;
    const out = applyUpdate(before, JSON.parse('{"$rename": {"__proto__": "b"}}'), {});
    expect(Object.keys(out.doc)).toEqual(['_id', 'b']);
    expect(out.doc.b).toEqual({ x: 1 });
    expect(Object.getPrototypeOf(out.doc)).toBe(Object.prototype);
  });
});
