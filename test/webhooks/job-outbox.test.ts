import mongoose, { type Connection } from 'mongoose';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { MongoJobEventOutbox } from '../../src/data/job-outbox.js';

// The job event outbox clears a job's flag only for the status whose event went out.
let connection: Connection;
let outbox: MongoJobEventOutbox;
beforeAll(async () => {
  const uri = new URL(inject('mongoUri'));
  uri.pathname = `/job_outbox_${process.pid}`;
  connection = await mongoose.createConnection(uri.toString()).asPromise();
  outbox = new MongoJobEventOutbox(connection);
  await outbox.init();
});
afterAll(async () => {
  await connection?.dropDatabase();
  await connection?.close();
});

it("a job whose status changed after its event was read keeps its event due; the new status's event clears it", async () => {
  const jobs = connection.db!.collection('jobs');
  await jobs.insertOne({ _id: 'j1' as never, accountId: 'a', status: 'completed', eventPending: true, updatedAt: new Date() });
  const read = await outbox.pending('j1');
  expect(read?.status).toBe('completed');
  // The status moves on before the publisher marks the first event published.
  await jobs.updateOne({ _id: 'j1' as never }, { $set: { status: 'canceled' } });
  await outbox.markPublished('j1', read!.status);
  expect((await outbox.pending('j1'))?.status).toBe('canceled');
  await outbox.markPublished('j1', 'canceled');
  expect(await outbox.pending('j1')).toBeNull();
});
