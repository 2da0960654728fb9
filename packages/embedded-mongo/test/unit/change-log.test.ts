// The change log's accounting (src/engine.ts): each event is counted at its BSON size, the fields it
// has, although the full document's share is the size measured when its write was checked.
import { BSON, ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';
import { Engine, type ChangeEvent } from '../../src/engine.js';
import { applyUpdate } from '../../src/update.js';

const size = (e: ChangeEvent): number => BSON.calculateObjectSize({ ...e, bytes: e.bytes }, { ignoreUndefined: true });

describe('change events', () => {
  it('are counted at their BSON size, whatever the operation', () => {
    const engine = new Engine();
    engine.markChangeStreams();
    const coll = engine.ensureCollection('db', 'c');
    const doc = { _id: new ObjectId(), name: 'x', usage: { day: { calls: 1 } } };
    engine.insert(coll, doc);
    const rid = coll.findRidById(doc._id)!;
    const out = applyUpdate(doc, { $inc: { 'usage.day.calls': 1 }, $set: { at: new Date() } }, {});
    engine.replace(coll, rid, out.doc, out.description);
    engine.replace(coll, rid, { _id: doc._id, name: 'replaced' }, undefined);
    engine.remove(coll, rid);
    engine.dropCollection('db', 'c');
    const kinds = engine.events.map((e) => e.operationType);
    expect(kinds).toEqual(['insert', 'update', 'replace', 'delete', 'drop']);
    for (const e of engine.events) expect(e.bytes).toBe(size(e));
    expect(engine.changelogStats().bytes).toBe(engine.events.reduce((n, e) => n + size(e), 0));
  });
});
