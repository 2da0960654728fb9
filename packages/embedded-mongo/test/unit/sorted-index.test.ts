// The sorted index (src/sorted-index.ts) and the index built on it (src/collection.ts Index), called
// directly. An index keeps its entries in the key order of its fields, BSON order per field and the
// direction given (https://www.mongodb.com/docs/manual/indexes/#index-types); a unique index refuses a
// second document with an equal key (https://www.mongodb.com/docs/manual/core/index-unique/).
import { Long } from 'bson';
import { describe, expect, it } from 'vitest';
import { compareValues } from '../../src/bson-order.js';
import { Index } from '../../src/collection.js';
import { SortedIndex, type Entry } from '../../src/sorted-index.js';

const byKey = (a: Entry, b: Entry): number => compareValues(a.key[0], b.key[0]) || a.rid - b.rid;
const keysOf = (index: SortedIndex): unknown[] => [...index.scanFrom(undefined)].map((e) => e.key[0]);
const from = (bound: unknown) => (e: Entry): number => compareValues(e.key[0], bound);

describe('SortedIndex', () => {
  it('keeps entries in order whatever the insertion order, across blocks', () => {
    const index = new SortedIndex(byKey);
    // Enough entries to split blocks (256 per block) several times, inserted in a scrambled order.
    const n = 2000;
    for (let i = 0; i < n; i++) index.insert({ key: [(i * 7919) % n], rid: i });
    expect(index.size).toBe(n);
    expect(keysOf(index)).toEqual(Array.from({ length: n }, (_, i) => i));
  });

  it('orders keys of mixed types by BSON order', () => {
    const index = new SortedIndex(byKey);
    const keys = ['b', 3, null, Long.fromNumber(2), true, 'a', 1.5];
    keys.forEach((key, rid) => index.insert({ key: [key], rid }));
    expect(keysOf(index)).toEqual([null, 1.5, Long.fromNumber(2), 3, 'a', 'b', true]);
  });

  const rows: Array<{ name: string; start: unknown; keys: number[] }> = [
    { name: 'a range scan from a present key', start: 40, keys: [40, 50] },
    { name: 'a range scan from between keys', start: 35, keys: [40, 50] },
    { name: 'a range scan from below every key', start: -1, keys: [10, 20, 30, 40, 50] },
    { name: 'a range scan from above every key', start: 60, keys: [] },
  ];
  it.each(rows)('$name', ({ start, keys }) => {
    const index = new SortedIndex(byKey);
    for (const k of [50, 10, 40, 20, 30]) index.insert({ key: [k], rid: k });
    expect([...index.scanFrom(from(start))].map((e) => e.key[0])).toEqual(keys);
  });

  it('scans backwards from before a bound', () => {
    const index = new SortedIndex(byKey);
    for (const k of [50, 10, 40, 20, 30]) index.insert({ key: [k], rid: k });
    // The probe is negative for entries up to the bound (30), 0 after it.
    const upTo30 = (e: Entry): number => (compareValues(e.key[0], 30) <= 0 ? -1 : 0);
    expect([...index.scanBackBefore(upTo30)].map((e) => e.key[0])).toEqual([30, 20, 10]);
  });

  it('removes exactly the entry asked for, and reports a missing one', () => {
    const index = new SortedIndex(byKey);
    for (let rid = 0; rid < 600; rid++) index.insert({ key: [rid % 3], rid });
    expect(index.remove({ key: [1], rid: 301 })).toBe(true);
    expect(index.remove({ key: [1], rid: 301 })).toBe(false);
    expect(index.remove({ key: [1], rid: 300 })).toBe(false); // rid 300 has key 0
    expect(index.size).toBe(599);
    expect([...index.scanFrom(from(1))].filter((e) => e.key[0] === 1).map((e) => e.rid)).not.toContain(301);
    for (let rid = 0; rid < 600; rid++) index.remove({ key: [rid % 3], rid });
    expect(index.size).toBe(0);
    expect(keysOf(index)).toEqual([]);
  });

  it('a scan paused while entries are inserted and removed goes on after the last entry it gave', () => {
    const index = new SortedIndex(byKey);
    for (let i = 0; i < 1000; i++) index.insert({ key: [i * 2], rid: i });
    const seen: number[] = [];
    for (const e of index.scanFrom(undefined)) {
      seen.push(e.key[0]);
      // Inserts on both sides of the scan split its block: nothing is repeated or skipped, and the
      // entries inserted ahead of it (501..599) are seen in their place.
      if (e.key[0] === 500) for (let i = 0; i < 300; i++) index.insert({ key: [i * 2 + 1], rid: 10_000 + i });
      if (e.key[0] === 800) index.remove({ key: [802], rid: 401 });
    }
    const expected = [...Array.from({ length: 1000 }, (_, i) => i * 2), ...Array.from({ length: 50 }, (_, i) => 501 + i * 2)]
      .filter((k) => k !== 802)
      .sort((a, b) => a - b);
    expect(seen).toEqual(expected);
  });
});

describe('Index', () => {
  const rows: Array<{ name: string; spec: Record<string, unknown>; doc: Record<string, unknown>; keys: unknown[][] }> = [
    { name: 'one field', spec: { a: 1 }, doc: { a: 5 }, keys: [[5]] },
    { name: 'a missing field indexes as null', spec: { a: 1 }, doc: {}, keys: [[null]] },
    { name: 'an array field gives one key per distinct element', spec: { a: 1 }, doc: { a: [3, 1, 3] }, keys: [[3], [1]] },
    { name: 'an empty array indexes as null', spec: { a: 1 }, doc: { a: [] }, keys: [[null]] },
    { name: 'compound over an array', spec: { a: 1, b: -1 }, doc: { a: [1, 2], b: 'x' }, keys: [[1, 'x'], [2, 'x']] },
    { name: 'a dotted path through an array of documents', spec: { 'i.s': 1 }, doc: { i: [{ s: 'p' }, { s: 'q' }] }, keys: [['p'], ['q']] },
    { name: 'sparse leaves out a document missing the field', spec: { a: 1, sparse: true }, doc: { b: 1 }, keys: [] },
    { name: 'partial leaves out a document its filter rejects', spec: { a: 1, partial: { a: { $gt: 5 } } }, doc: { a: 1 }, keys: [] },
  ];
  it.each(rows)('$name', ({ spec, doc, keys }) => {
    const { sparse, partial, ...key } = spec;
    const index = new Index({ v: 2, key, name: 'i', sparse: sparse as boolean | undefined, partialFilterExpression: partial as never });
    expect(index.keysOf(doc)).toEqual(keys);
  });

  it('a descending field orders its entries from high to low', () => {
    const index = new Index({ v: 2, key: { a: -1 }, name: 'a_-1' });
    [1, 3, 2].forEach((a, rid) => index.add(rid, index.keysOf({ a })));
    expect([...index.tree.scanFrom(undefined)].map((e) => e.key[0])).toEqual([3, 2, 1]);
  });

  it('finds a duplicate key held by another record (unique enforcement), numbers equal across types', () => {
    const index = new Index({ v: 2, key: { a: 1 }, name: 'a_1', unique: true });
    index.add(1, index.keysOf({ a: 5 }));
    expect(index.findDuplicate(index.keysOf({ a: Long.fromNumber(5) }), undefined)).toEqual({ rid: 1, key: [Long.fromNumber(5)] });
    expect(index.findDuplicate(index.keysOf({ a: 5 }), 1)).toBeUndefined();
    expect(index.findDuplicate(index.keysOf({ a: 6 }), undefined)).toBeUndefined();
  });
});
