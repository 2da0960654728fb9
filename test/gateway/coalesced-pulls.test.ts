import { MongoClient, ObjectId, type Db } from 'mongodb';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { CoalescedPulls } from '../../src/data/coalesced-pulls.js';

// Values pulled from many documents within one window are one bulkWrite; each caller hears of its own.
let client: MongoClient;
let db: Db;
beforeAll(async () => {
  client = await MongoClient.connect(inject('mongoUri'), { monitorCommands: true });
  db = client.db(`t_pulls_${process.pid}`);
});
afterAll(async () => {
  await db?.dropDatabase();
  await client?.close();
});

it('pulls every value of a window from its document in one write, and resolves each caller', async () => {
  const col = db.collection<{ _id: ObjectId; ops: string[] }>('docs');
  const [a, b] = [new ObjectId(), new ObjectId()];
  await col.insertMany([
    { _id: a, ops: ['a1', 'a2', 'a3', 'keep'] },
    { _id: b, ops: ['b1', 'keep'] },
  ]);
  const writes: string[] = [];
  const onCommand = (e: { commandName: string; command: Record<string, unknown> }) => {
    if (e.command[e.commandName] === 'docs') writes.push(e.commandName);
  };
  client.on('commandStarted', onCommand);
  const pulls = new CoalescedPulls(col, (values) => ({ ops: { $in: values } }), 50);
  await Promise.all([pulls.pull(a, 'a1'), pulls.pull(b, 'b1'), pulls.pull(a, 'a3'), pulls.pull(a, 'a2')]);
  client.off('commandStarted', onCommand);
  expect(writes).toEqual(['update']);
  expect(await col.find().sort({ _id: 1 }).toArray()).toEqual([
    { _id: a, ops: ['keep'] },
    { _id: b, ops: ['keep'] },
  ]);
});

it('a write that fails rejects every caller of its window (their repair takes over)', async () => {
  const col = db.collection<{ _id: ObjectId; ops: unknown }>('bad');
  const id = new ObjectId();
  // $pull on a field that is not an array fails on the server.
  await col.insertOne({ _id: id, ops: 'not an array' });
  const pulls = new CoalescedPulls(col, (values) => ({ ops: { $in: values } }), 10);
  const outcomes = await Promise.allSettled([pulls.pull(id, 'x'), pulls.pull(id, 'y')]);
  expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
  await pulls.drain();
});
