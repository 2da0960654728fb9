// Projections (src/projection.ts) called directly: one row per case, each with the document MongoDB
// documents as the result, field order included (https://www.mongodb.com/docs/manual/reference/method/db.collection.find/#projection,
// .../reference/operator/projection/slice/, /elemMatch/ and /positional/).
import { describe, expect, it } from 'vitest';
import type { Doc } from '../../src/bson-order.js';
import { MongoError } from '../../src/errors.js';
import { compileProjection } from '../../src/projection.js';

const doc = {
  _id: 1,
  name: 'x',
  size: { h: 14, w: 21, uom: 'cm' },
  tags: ['a', 'b', 'c', 'd'],
  grades: [
    { grade: 80, mean: 75 },
    { grade: 85, mean: 90 },
    { grade: 90, mean: 85 },
  ],
  items: [{ sku: 'p', qty: 1 }, { sku: 'q', qty: 2 }],
};

type Row = { name: string; projection: Doc; filter?: Doc; out: Doc };

describe('projections', () => {
  const rows: Row[] = [
    { name: 'inclusion keeps _id', projection: { name: 1 }, out: { _id: 1, name: 'x' } },
    { name: 'inclusion without _id', projection: { name: 1, _id: 0 }, out: { name: 'x' } },
    { name: 'inclusion keeps the document order', projection: { tags: 1, name: 1 }, out: { _id: 1, name: 'x', tags: ['a', 'b', 'c', 'd'] } },
    { name: 'only _id', projection: { _id: 1 }, out: { _id: 1 } },
    { name: 'exclusion', projection: { grades: 0, items: 0, tags: 0 }, out: { _id: 1, name: 'x', size: { h: 14, w: 21, uom: 'cm' } } },
    { name: 'exclusion of _id only', projection: { _id: 0, grades: 0, items: 0, tags: 0, size: 0 }, out: { name: 'x' } },
    { name: 'dotted inclusion', projection: { 'size.uom': 1 }, out: { _id: 1, size: { uom: 'cm' } } },
    { name: 'dotted exclusion', projection: { 'size.uom': 0, grades: 0, items: 0, tags: 0 }, out: { _id: 1, name: 'x', size: { h: 14, w: 21 } } },
    { name: 'dotted inclusion into an array of documents', projection: { 'items.sku': 1 }, out: { _id: 1, items: [{ sku: 'p' }, { sku: 'q' }] } },
    { name: '$slice: first n', projection: { tags: { $slice: 2 }, name: 1 }, out: { _id: 1, name: 'x', tags: ['a', 'b'] } },
    { name: '$slice: last n', projection: { tags: { $slice: -1 }, _id: 0, name: 1 }, out: { name: 'x', tags: ['d'] } },
    { name: '$slice: [skip, limit]', projection: { tags: { $slice: [1, 2] }, name: 1 }, out: { _id: 1, name: 'x', tags: ['b', 'c'] } },
    {
      name: '$slice alone keeps every other field',
      projection: { tags: { $slice: 1 } },
      out: { ...doc, tags: ['a'] },
    },
    {
      name: '$elemMatch alone: _id and the first matching element',
      projection: { grades: { $elemMatch: { mean: { $gt: 80 } } } },
      out: { _id: 1, grades: [{ grade: 85, mean: 90 }] },
    },
    {
      name: '$elemMatch comes after the other included fields',
      projection: { grades: { $elemMatch: { grade: { $gte: 85 }, mean: { $lt: 90 } } }, name: 1 },
      out: { _id: 1, name: 'x', grades: [{ grade: 90, mean: 85 }] },
    },
    { name: '$elemMatch on values', projection: { tags: { $elemMatch: { $gt: 'b' } }, _id: 0 }, out: { tags: ['c'] } },
    { name: '$elemMatch leaves the field out when nothing matches', projection: { grades: { $elemMatch: { grade: 0 } } }, out: { _id: 1 } },
    { name: '$elemMatch leaves a non-array field out', projection: { name: { $elemMatch: { $eq: 'x' } } }, out: { _id: 1 } },
    { name: 'positional $ from a query on values', projection: { 'tags.$': 1 }, filter: { tags: 'c' }, out: { _id: 1, tags: ['c'] } },
    {
      name: 'positional $ from a query on element fields, in document order',
      projection: { 'grades.$': 1, name: 1 },
      filter: { 'grades.grade': { $gte: 85 } },
      out: { _id: 1, name: 'x', grades: [{ grade: 85, mean: 90 }] },
    },
    {
      name: 'positional $ from an $elemMatch query',
      projection: { 'grades.$': 1 },
      filter: { grades: { $elemMatch: { grade: { $gte: 85 }, mean: { $lt: 90 } } } },
      out: { _id: 1, grades: [{ grade: 90, mean: 85 }] },
    },
  ];
  it.each(rows)('$name', ({ projection, filter, out }) => {
    const project = compileProjection(projection, filter)!;
    const got = project(doc);
    expect(got).toEqual(out);
    expect(Object.keys(got)).toEqual(Object.keys(out));
  });

  it('an empty projection returns the document unchanged', () => {
    expect(compileProjection({}, undefined)).toBeUndefined();
  });

  it('__proto__ is projected as an ordinary field', () => {
    const stored = JSON.parse('{"_id": 1, "__proto__": {"x": 1}, "a": 2}') as Doc;
    const got = compileProjection(JSON.parse('{"__proto__": 1}'), undefined)!(stored);
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    expect(Object.keys(got)).toEqual(['_id', '__proto__']);
    expect(Object.getOwnPropertyDescriptor(got, '__proto__')?.value).toEqual({ x: 1 });
  });
});

describe('refusals', () => {
  // The error mongod gives for each (.../projection/positional/, /elemMatch/, and find's projection rules).
  const rows: Array<{ name: string; projection: Doc; filter?: Doc; code: number; message: string }> = [
    { name: 'inclusion mixed with exclusion', projection: { name: 1, tags: 0 }, code: 31254, message: 'Cannot do exclusion on field tags in inclusion projection' },
    { name: '$slice with a non-positive limit', projection: { tags: { $slice: [1, 0] } }, code: 28724, message: 'Second argument to $slice must be a positive number' },
    { name: '$elemMatch on a nested field', projection: { 'a.b': { $elemMatch: { c: 1 } } }, code: 31275, message: 'Cannot use $elemMatch projection on a nested field.' },
    { name: 'positional with exclusion', projection: { 'tags.$': 1, name: 0 }, filter: { tags: 'a' }, code: 31395, message: 'positional projection cannot be used with exclusion' },
    { name: 'two positional projections', projection: { 'tags.$': 1, 'grades.$': 1 }, filter: { tags: 'a' }, code: 31276, message: 'Cannot specify more than one positional projection per query.' },
    { name: 'positional without a query on the array', projection: { 'tags.$': 1 }, filter: { name: 'x' }, code: 51246, message: "positional operator '.$' couldn't find a matching element in the array" },
  ];
  it.each(rows)('$name', ({ projection, filter, code, message }) => {
    let caught: unknown;
    try {
      compileProjection(projection, filter)!(doc);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(MongoError);
    expect((caught as MongoError).code).toBe(code);
    expect((caught as MongoError).message).toContain(message);
  });
});

describe('plain projections, compiled once per shape', () => {
  it('tell the same fields apart by whether each is on, and by their names', () => {
    const project = (p: Doc): Doc => compileProjection(p, undefined)!(doc);
    expect(project({ name: 1, _id: 1 })).toEqual({ _id: 1, name: 'x' });
    expect(project({ name: 1, _id: 0 })).toEqual({ name: 'x' });
    expect(project({ name: 0, _id: 0 })).toEqual({ size: doc.size, tags: doc.tags, grades: doc.grades, items: doc.items });
    expect(project({ 'size.h': 1, _id: 0 })).toEqual({ size: { h: 14 } });
    expect(project({ size: 1, h: 1, _id: 0 })).toEqual({ size: doc.size });
  });

  it('refuse a mix of inclusion and exclusion every time, not only the first', () => {
    for (let i = 0; i < 2; i++) expect(() => compileProjection({ name: 1, tags: 0 }, undefined)).toThrow('Cannot do exclusion on field tags in inclusion projection');
  });
});
