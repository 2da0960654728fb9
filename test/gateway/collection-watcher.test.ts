import { MongoClient, type Db } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { CollectionWatcher, type WatchEvent, type WatcherState } from '../../src/data/collection-watcher.js';
import { until } from '../helpers/until.js';

let client: MongoClient;
let db: Db;
const watchers: CollectionWatcher[] = [];

beforeAll(async () => {
  client = await MongoClient.connect(inject('mongoUri'));
  db = client.db(`t_watcher_${process.pid}`);
  await db.dropDatabase();
});
afterAll(async () => {
  await Promise.all(watchers.map((w) => w.close()));
  await db?.dropDatabase();
  await client?.close();
});

function watch(collection: string, opts: Partial<ConstructorParameters<typeof CollectionWatcher>[0]> = {}) {
  const events: WatchEvent[] = [];
  const states: WatcherState[] = [];
  const w = new CollectionWatcher({ db, collection, onEvent: (e) => events.push(e), onStateChange: (s) => states.push(s), pollMs: 50, ...opts });
  watchers.push(w);
  return { w, events, states };
}

describe('CollectionWatcher', () => {
  it('streams inserts, updates and deletes once started (live)', async () => {
    const { w, events, states } = watch('a', { fullDocument: true });
    await w.start();
    expect(w.state).toBe('changestream');
    expect(w.live).toBe(true);
    expect(states).toEqual(['changestream']);
    const col = db.collection('a');
    // No wait between start() and the writes: start() resolves once nothing can be missed.
    await col.insertOne({ _id: 'x' as never, n: 1, updatedAt: new Date() });
    await col.updateOne({ _id: 'x' as never }, { $set: { n: 2, updatedAt: new Date() } });
    // 'updateLookup' reads the document when the event is read (as MongoDB does): delete only once the
    // update has arrived, or a slow read finds the document gone and the event has no fullDocument.
    await until(() => events.length >= 2, 'the update');
    await col.deleteOne({ _id: 'x' as never });
    await until(() => events.length >= 3, 'three events');
    expect(events.map((e) => e.operationType)).toEqual(['insert', 'update', 'delete']);
    expect(events.every((e) => e.documentKey._id === 'x')).toBe(true);
    expect(events[1]!.fullDocument).toMatchObject({ n: 2 });
  });

  it('match filters on document fields; deletes still come through', async () => {
    const { w, events } = watch('b', { match: { owner: 'me' }, fullDocument: true });
    await w.start();
    const col = db.collection('b');
    await col.insertMany([
      { _id: 1 as never, owner: 'other' },
      { _id: 2 as never, owner: 'me' },
    ]);
    await col.deleteOne({ _id: 1 as never });
    // Events arrive in order: once this later one is in, nothing filtered out can still come.
    await col.insertOne({ _id: 3 as never, owner: 'me' });
    await until(() => events.some((e) => e.documentKey._id === 3), 'the last insert');
    expect(events.map((e) => [e.operationType, e.documentKey._id])).toEqual([
      ['insert', 2],
      ['delete', 1],
      ['insert', 3],
    ]);
  });

  it('updatesSetting: an update that does not set a named field never arrives; other operations do', async () => {
    const { w, events } = watch('u', { fullDocument: true, updatesSetting: ['updatedAt'], match: { owner: 'me' } });
    await w.start();
    const col = db.collection('u');
    await col.insertOne({ _id: 1 as never, owner: 'me', n: 0, updatedAt: new Date(0) });
    await col.updateOne({ _id: 1 as never }, { $inc: { n: 1 } });
    await col.updateOne({ _id: 1 as never }, [{ $set: { n: { $add: ['$n', 1] } } }]);
    await col.updateOne({ _id: 1 as never }, { $set: { n: 10, updatedAt: new Date() } });
    // The update's document is looked up when its event is read: replace only once it has arrived.
    await until(() => events.some((e) => e.operationType === 'update'), 'the update that sets updatedAt');
    await col.insertOne({ _id: 2 as never, owner: 'other', updatedAt: new Date() });
    await col.replaceOne({ _id: 1 as never }, { owner: 'me', n: 11 });
    await col.deleteOne({ _id: 1 as never });
    await until(() => events.some((e) => e.operationType === 'delete'), 'the delete');
    expect(events.map((e) => [e.operationType, e.documentKey._id, (e.fullDocument as { n?: number } | undefined)?.n])).toEqual([
      ['insert', 1, 0],
      ['update', 1, 10],
      ['replace', 1, 11],
      ['delete', 1, undefined],
    ]);
  });

  it('poll mode: reports documents whose updatedAt moved, once each, and is not live', async () => {
    const { w, events } = watch('c', { mode: 'poll' });
    await w.start();
    expect(w.state).toBe('poll');
    expect(w.live).toBe(false);
    const col = db.collection('c');
    const t1 = new Date();
    await col.insertOne({ _id: 'k' as never, v: 1, updatedAt: t1 });
    await until(() => events.length === 1, 'the first poll');
    // Two more polls, each proven by a document it found, re-read 'k' (inside the overlap) without reporting it again.
    for (const [i, id] of ['m1', 'm2'].entries()) {
      await col.insertOne({ _id: id as never, updatedAt: new Date(t1.getTime() + 1 + i) });
      await until(() => events.some((e) => e.documentKey._id === id), `a poll that finds ${id}`);
    }
    expect(events.map((e) => e.documentKey._id)).toEqual(['k', 'm1', 'm2']);
    await col.updateOne({ _id: 'k' as never }, { $set: { v: 2, updatedAt: new Date(t1.getTime() + 5) } });
    await until(() => events.length === 4, 'the update');
    expect(events[3]).toMatchObject({ operationType: 'update', documentKey: { _id: 'k' }, fullDocument: { v: 2 } });
  });

  it('a stream that fails (server gone) falls back to polling and says so', async () => {
    const server = await startEmbeddedMongo({ port: 0 });
    // Server selection fails fast once the server is gone, but not so fast that a busy machine trips it while it is up.
    const own = await MongoClient.connect(server.uri, { serverSelectionTimeoutMS: 2000 });
    const states: WatcherState[] = [];
    const w = new CollectionWatcher({ db: own.db('x'), collection: 'd', onEvent: () => {}, onStateChange: (s) => states.push(s), pollMs: 50, retryStreamMs: 60_000 });
    try {
      await w.start();
      expect(w.live).toBe(true);
      await server.stop();
      await until(() => states.includes('poll'), 'the fallback to polling');
      expect(w.live).toBe(false);
    } finally {
      await w.close();
      await own.close(true);
    }
  });

  it('close() stops everything and reports stopped', async () => {
    const { w, states } = watch('e');
    await w.start();
    await w.close();
    expect(w.state).toBe('stopped');
    expect(states.at(-1)).toBe('stopped');
  });
});
