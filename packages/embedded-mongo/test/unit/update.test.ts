// The update engine (src/update.ts) called directly: one row per case, each with the document MongoDB
// documents as the result. Each table cites its page under https://www.mongodb.com/docs/manual/reference/operator/update/.
import { Double, Long, Timestamp } from 'bson';
import { describe, expect, it } from 'vitest';
import type { Doc } from '../../src/bson-order.js';
import { MongoError } from '../../src/errors.js';
import { applyUpdate, seedFromFilter } from '../../src/update.js';

type Row = { name: string; before: Doc; update: Doc; after: Doc; filter?: Doc; arrayFilters?: Doc[] };

function check(rows: Row[]): void {
  it.each(rows)('$name', ({ before, update, after, filter, arrayFilters }) => {
    const frozen = structuredClone(before);
    const out = applyUpdate(before, update, { filter, arrayFilters });
    expect(out.doc).toEqual(after);
    // The stored document an update starts from never changes (cursors and change events hold it).
    expect(before).toEqual(frozen);
  });
}

describe('field operators', () => {
  // .../update/set/, /unset/, /inc/, /mul/, /min/, /max/, /rename/, /currentDate/.
  check([
    { name: '$set a new field', before: { _id: 1 }, update: { $set: { a: 1 } }, after: { _id: 1, a: 1 } },
    { name: '$set creates embedded documents on a dotted path', before: { _id: 1 }, update: { $set: { 'a.b.c': 1 } }, after: { _id: 1, a: { b: { c: 1 } } } },
    { name: '$set an array element by index', before: { _id: 1, a: [1, 2] }, update: { $set: { 'a.1': 5 } }, after: { _id: 1, a: [1, 5] } },
    { name: '$set past the end pads with null', before: { _id: 1, a: [1] }, update: { $set: { 'a.3': 4 } }, after: { _id: 1, a: [1, null, null, 4] } },
    { name: '$unset removes a field', before: { _id: 1, a: 1, b: 2 }, update: { $unset: { a: '' } }, after: { _id: 1, b: 2 } },
    { name: '$unset of an array element sets it to null', before: { _id: 1, a: [1, 2] }, update: { $unset: { 'a.0': '' } }, after: { _id: 1, a: [null, 2] } },
    { name: '$inc a missing field sets it', before: { _id: 1 }, update: { $inc: { n: 5 } }, after: { _id: 1, n: 5 } },
    { name: '$inc by a negative amount', before: { _id: 1, n: 5 }, update: { $inc: { n: -2 } }, after: { _id: 1, n: 3 } },
    { name: '$inc Int32 by Long gives a Long', before: { _id: 1, n: 1 }, update: { $inc: { n: Long.fromNumber(2) } }, after: { _id: 1, n: Long.fromNumber(3) } },
    { name: '$inc past Int32 gives a Long', before: { _id: 1, n: 2147483647 }, update: { $inc: { n: 1 } }, after: { _id: 1, n: Long.fromNumber(2147483648) } },
    { name: '$inc below Int32 gives a Long', before: { _id: 1, n: -2147483648 }, update: { $inc: { n: -1 } }, after: { _id: 1, n: Long.fromNumber(-2147483649) } },
    { name: '$inc back to 0 stores 0, not -0', before: { _id: 1, n: -1 }, update: { $inc: { n: 1 } }, after: { _id: 1, n: 0 } },
    { name: '$mul past Int32 gives a Long', before: { _id: 1, n: 65536 }, update: { $mul: { n: 65536 } }, after: { _id: 1, n: Long.fromNumber(4294967296) } },
    { name: '$mul by 0 of a negative Int32 stores 0', before: { _id: 1, n: -5 }, update: { $mul: { n: 0 } }, after: { _id: 1, n: 0 } },
    { name: '$mul a missing field sets 0', before: { _id: 1 }, update: { $mul: { n: 3 } }, after: { _id: 1, n: 0 } },
    { name: '$mul a Double keeps a Double', before: { _id: 1, n: new Double(2) }, update: { $mul: { n: 2 } }, after: { _id: 1, n: new Double(4) } },
    { name: '$min lowers', before: { _id: 1, n: 5 }, update: { $min: { n: 3 } }, after: { _id: 1, n: 3 } },
    { name: '$min leaves a lower value', before: { _id: 1, n: 2 }, update: { $min: { n: 3 } }, after: { _id: 1, n: 2 } },
    { name: '$max by BSON order: a string is above a number', before: { _id: 1, n: 5 }, update: { $max: { n: 'a' } }, after: { _id: 1, n: 'a' } },
    { name: '$max sets a missing field', before: { _id: 1 }, update: { $max: { n: 1 } }, after: { _id: 1, n: 1 } },
    { name: '$rename moves a field', before: { _id: 1, a: 1 }, update: { $rename: { a: 'b' } }, after: { _id: 1, b: 1 } },
    {
      name: 'counters under one bucket, a field whose name extends another, and $min of a date',
      before: { _id: 1, n: 9, usage: { d1: { calls: 1, credits: 1 } }, oldest: new Date('2026-01-02') },
      update: { $inc: { n: -1, 'usage.d1.calls': 1, 'usage.d1.credits': 2, 'usage.d10.calls': 1 }, $set: { 'usage.d1x': 0 }, $min: { oldest: new Date('2026-01-01') } },
      after: { _id: 1, n: 8, usage: { d1: { calls: 2, credits: 3 }, d10: { calls: 1 }, d1x: 0 }, oldest: new Date('2026-01-01') },
    },
  ]);

  it('$currentDate sets a Date, or a Timestamp when asked', () => {
    const out = applyUpdate({ _id: 1 }, { $currentDate: { d: true, t: { $type: 'timestamp' } } }, {});
    expect(out.doc.d).toBeInstanceOf(Date);
    expect(out.doc.t).toBeInstanceOf(Timestamp);
  });
});

describe('array operators', () => {
  // .../update/push/ (with $each, $position, $sort, $slice), /addToSet/, /pull/, /pop/, /pullAll/.
  check([
    { name: '$push appends', before: { _id: 1, a: [1] }, update: { $push: { a: 2 } }, after: { _id: 1, a: [1, 2] } },
    { name: '$push creates the array', before: { _id: 1 }, update: { $push: { a: 1 } }, after: { _id: 1, a: [1] } },
    { name: '$push an array as one element', before: { _id: 1, a: [] }, update: { $push: { a: [1, 2] } }, after: { _id: 1, a: [[1, 2]] } },
    { name: '$push $each', before: { _id: 1, a: [1] }, update: { $push: { a: { $each: [2, 3] } } }, after: { _id: 1, a: [1, 2, 3] } },
    { name: '$push $position 0', before: { _id: 1, a: [3] }, update: { $push: { a: { $each: [1, 2], $position: 0 } } }, after: { _id: 1, a: [1, 2, 3] } },
    { name: '$push $sort and $slice keep the top 2', before: { _id: 1, a: [5, 1] }, update: { $push: { a: { $each: [3], $sort: -1, $slice: 2 } } }, after: { _id: 1, a: [5, 3] } },
    { name: '$push negative $slice keeps the last', before: { _id: 1, a: [1, 2] }, update: { $push: { a: { $each: [3], $slice: -2 } } }, after: { _id: 1, a: [2, 3] } },
    { name: '$push $sort by a field', before: { _id: 1, a: [{ s: 2 }] }, update: { $push: { a: { $each: [{ s: 1 }], $sort: { s: 1 } } } }, after: { _id: 1, a: [{ s: 1 }, { s: 2 }] } },
    { name: '$addToSet skips a present value', before: { _id: 1, a: [1, 2] }, update: { $addToSet: { a: 2 } }, after: { _id: 1, a: [1, 2] } },
    { name: '$addToSet compares numbers by value', before: { _id: 1, a: [1] }, update: { $addToSet: { a: new Double(1) } }, after: { _id: 1, a: [1] } },
    { name: '$addToSet $each', before: { _id: 1, a: [1] }, update: { $addToSet: { a: { $each: [1, 3] } } }, after: { _id: 1, a: [1, 3] } },
    { name: '$pull a value', before: { _id: 1, a: [1, 2, 1] }, update: { $pull: { a: 1 } }, after: { _id: 1, a: [2] } },
    { name: '$pull with a condition on values', before: { _id: 1, a: [3, 5, 6, 7] }, update: { $pull: { a: { $gte: 6 } } }, after: { _id: 1, a: [3, 5] } },
    { name: '$pull with a query on element documents', before: { _id: 1, a: [{ x: 1 }, { x: 2 }] }, update: { $pull: { a: { x: 2 } } }, after: { _id: 1, a: [{ x: 1 }] } },
    { name: '$pop the last element', before: { _id: 1, a: [1, 2, 3] }, update: { $pop: { a: 1 } }, after: { _id: 1, a: [1, 2] } },
    { name: '$pop the first element', before: { _id: 1, a: [1, 2, 3] }, update: { $pop: { a: -1 } }, after: { _id: 1, a: [2, 3] } },
    { name: '$pullAll', before: { _id: 1, a: [0, 2, 5, 5, 1] }, update: { $pullAll: { a: [0, 5] } }, after: { _id: 1, a: [2, 1] } },
    { name: '$pullAll compares whole values: a regex is a value', before: { _id: 1, a: ['abc', /b/] }, update: { $pullAll: { a: [/b/] } }, after: { _id: 1, a: ['abc'] } },
    { name: '$pullAll of a missing field', before: { _id: 1 }, update: { $pullAll: { a: [1] } }, after: { _id: 1 } },
  ]);
});

describe('positional operators', () => {
  // .../update/positional/, /positional-all/, /positional-filtered/.
  check([
    { name: '$ sets the first element the query matched', before: { _id: 1, g: [80, 85, 90] }, filter: { g: 85 }, update: { $set: { 'g.$': 82 } }, after: { _id: 1, g: [80, 82, 90] } },
    { name: '$ in element documents', before: { _id: 1, g: [{ s: 1 }, { s: 2 }] }, filter: { 'g.s': 2 }, update: { $inc: { 'g.$.s': 10 } }, after: { _id: 1, g: [{ s: 1 }, { s: 12 }] } },
    { name: '$[] sets every element', before: { _id: 1, g: [1, 2] }, update: { $inc: { 'g.$[]': 1 } }, after: { _id: 1, g: [2, 3] } },
    { name: '$[] in element documents', before: { _id: 1, g: [{ s: 1 }, { s: 2 }] }, update: { $set: { 'g.$[].s': 0 } }, after: { _id: 1, g: [{ s: 0 }, { s: 0 }] } },
    { name: '$[id] sets the elements the array filter selects', before: { _id: 1, g: [95, 92, 90] }, arrayFilters: [{ e: { $gte: 92 } }], update: { $set: { 'g.$[e]': 100 } }, after: { _id: 1, g: [100, 100, 90] } },
    {
      name: '$[id] with a filter on element fields',
      before: { _id: 1, g: [{ s: 90, m: 1 }, { s: 70, m: 1 }] },
      arrayFilters: [{ 'e.s': { $gte: 85 } }],
      update: { $set: { 'g.$[e].m': 2 } },
      after: { _id: 1, g: [{ s: 90, m: 2 }, { s: 70, m: 1 }] },
    },
    {
      name: 'nested $[] and $[id]',
      before: { _id: 1, d: [{ q: [1, 5] }, { q: [6] }] },
      arrayFilters: [{ x: { $gt: 4 } }],
      update: { $set: { 'd.$[].q.$[x]': 0 } },
      after: { _id: 1, d: [{ q: [1, 0] }, { q: [0] }] },
    },
  ]);
});

describe('__proto__ is an ordinary field', () => {
  // A field name is only a name (https://www.mongodb.com/docs/manual/core/document/#field-names); no
  // update may reach JavaScript's Object.prototype.
  it.each([
    { name: '$set under __proto__', update: JSON.parse('{"$set": {"__proto__.polluted": 1}}') },
    { name: '$set under constructor.prototype', update: { $set: { 'constructor.prototype.polluted': 1 } } },
    { name: '$inc under __proto__', update: { $inc: { '__proto__.polluted': 1 } } },
    { name: '$push under __proto__', update: { $push: { '__proto__.polluted': 1 } } },
  ])('$name stores a field and leaves Object.prototype alone', ({ update }) => {
    const out = applyUpdate({ _id: 1 }, update, {});
    expect(({} as Doc).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(out.doc)).toBe(Object.prototype);
    expect(Object.keys(out.doc)).toEqual(['_id', Object.keys(Object.values(update)[0] as Doc)[0].split('.')[0]]);
  });

  it('an update that copies a stored __proto__ field keeps it as a field', () => {
    const before = JSON.parse('{"_id": 1, "__proto__": {"x": 1}, "a": {"__proto__": {"y": 2}}}') as Doc;
    const out = applyUpdate(before, { $set: { b: 1, 'a.c': 2 } }, {});
    expect(Object.getPrototypeOf(out.doc)).toBe(Object.prototype);
    expect(Object.keys(out.doc)).toEqual(['_id', '__proto__', 'a', 'b']);
    expect(Object.getOwnPropertyDescriptor(out.doc, '__proto__')?.value).toEqual({ x: 1 });
    expect(Object.getPrototypeOf(out.doc.a)).toBe(Object.prototype);
    expect(Object.keys(out.doc.a)).toEqual(['__proto__', 'c']);
    expect(({} as Doc).x).toBeUndefined();
  });

  it('an upsert seeded from a __proto__ filter field stores it as a field', () => {
    const seed = seedFromFilter(JSON.parse('{"__proto__.polluted": 7}'));
    expect(({} as Doc).polluted).toBeUndefined();
    expect(Object.keys(seed)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(seed, '__proto__')?.value).toEqual({ polluted: 7 });
  });
});

describe('refusals', () => {
  // The error mongod gives for each (.../update/ pages, and dot-dollar-considerations/dollar-prefix/).
  const rows: Array<{ name: string; before: Doc; update: Doc; filter?: Doc; arrayFilters?: Doc[]; code: number; message: string }> = [
    { name: 'two operators on one path', before: { _id: 1 }, update: { $set: { a: 1 }, $inc: { a: 1 } }, code: 40, message: "Updating the path 'a' would create a conflict at 'a'" },
    { name: 'a path and its parent', before: { _id: 1 }, update: { $set: { a: 1, 'a.b': 2 } }, code: 40, message: 'would create a conflict' },
    { name: 'a path and its parent, child first', before: { _id: 1 }, update: { $inc: { 'a.b.c': 1 }, $set: { 'a.b': 2 } }, code: 40, message: "Updating the path 'a.b' would create a conflict at 'a.b.c'" },
    { name: 'changing _id', before: { _id: 1 }, update: { $set: { _id: 2 } }, code: 66, message: "would modify the immutable field '_id'" },
    { name: 'replacing _id', before: { _id: 1 }, update: { _id: 2, a: 1 }, code: 66, message: "the (immutable) field '_id' was found to have been altered" },
    { name: '$inc of a string', before: { _id: 1, a: 'x' }, update: { $inc: { a: 1 } }, code: 14, message: 'Cannot apply $inc to a value of non-numeric type' },
    { name: '$inc by a string', before: { _id: 1 }, update: { $inc: { a: 'x' } }, code: 14, message: 'Cannot increment with non-numeric argument' },
    { name: '$push to a non-array', before: { _id: 1, a: 1 }, update: { $push: { a: 1 } }, code: 2, message: "The field 'a' must be an array" },
    { name: '$pullAll with a value that is not an array', before: { _id: 1, a: [1] }, update: { $pullAll: { a: 1 } }, code: 2, message: '$pullAll requires an array argument but was given a int' },
    { name: '$pullAll from a non-array', before: { _id: 1, a: 1 }, update: { $pullAll: { a: [1] } }, code: 2, message: 'Cannot apply $pull to a non-array value' },
    { name: 'a field inside an array', before: { _id: 1, a: [{ b: 1 }] }, update: { $set: { 'a.b': 2 } }, code: 28, message: "Cannot create field 'b'" },
    { name: '$ without a query on the array', before: { _id: 1, a: [1] }, update: { $set: { 'a.$': 2 } }, code: 2, message: 'The positional operator did not find the match needed from the query.' },
    { name: '$[id] without its array filter', before: { _id: 1, a: [1] }, update: { $set: { 'a.$[x]': 2 } }, code: 2, message: "No array filter found for identifier 'x'" },
    { name: 'an unused array filter', before: { _id: 1, a: [1] }, update: { $set: { a: [] } }, arrayFilters: [{ x: 1 }], code: 9, message: "The array filter for identifier 'x' was not used" },
    { name: '$set of a top-level $ field on a stored document', before: { _id: 1 }, update: { $set: { $hotel: 1 } }, code: 52, message: "The dollar ($) prefixed field '$hotel'" },
    { name: 'a replacement with a top-level $ field', before: { _id: 1 }, update: { a: 1, $rooms: 2 }, code: 52, message: "The dollar ($) prefixed field '$rooms'" },
  ];
  it.each(rows)('$name', ({ before, update, filter, arrayFilters, code, message }) => {
    let caught: unknown;
    try {
      applyUpdate(before, update, { filter, arrayFilters });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(MongoError);
    expect((caught as MongoError).code).toBe(code);
    expect((caught as MongoError).message).toContain(message);
  });

  it('an upsert may store top-level $ fields (inserted, not updated)', () => {
    expect(applyUpdate({ _id: 1 }, { $set: { $hotel: 3 } }, { inserting: true }).doc).toEqual({ _id: 1, $hotel: 3 });
  });

  it('a replacement may hold DBRef fields at top level after its first field', () => {
    expect(applyUpdate({ _id: 1 }, { a: 1, $ref: 'c', $id: 2 }, {}).doc).toEqual({ _id: 1, a: 1, $ref: 'c', $id: 2 });
  });
});
