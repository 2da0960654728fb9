import { MongoClient } from 'mongodb';
import { afterAll, expect, it } from 'vitest';
import { startEmbeddedMongo, type EmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { QueueNotificationChannel } from '../../src/queue/channel.js';

// The queue's change stream through a database outage, in process: the server goes away (its sockets
// are destroyed) and comes back on the same port. The channel must neither throw (no 'error' listener
// is attached here: an unguarded emit would be an uncaught exception) nor stay deaf afterwards.
const servers: EmbeddedMongo[] = [];
let client: MongoClient | undefined;

afterAll(async () => {
  await client?.close(true);
  for (const s of servers) await s.stop();
});

async function waitFor(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('watches again once the database is back after an outage', async () => {
  const first = await startEmbeddedMongo({ port: 0 });
  servers.push(first);
  client = await MongoClient.connect(first.uri, { serverSelectionTimeoutMS: 2000 });
  const db = client.db('channel');
  const channel = new QueueNotificationChannel(db, 'entries', 'changestream');
  const seen: string[] = [];
  channel.subscribe((n) => {
    seen.push(n.jobName);
  });
  await channel.connect();
  expect(channel.crossProcess).toBe(true);
  // A stream reports what is inserted once its cursor is open on the server (polling covers the rest):
  // keep inserting until one is reported.
  let n = 0;
  const reported = (prefix: string) => async () => {
    await db
      .collection('entries')
      .insertOne({ name: `${prefix} ${n++}`, nextRunAt: new Date() })
      .catch(() => undefined);
    return seen.some((name) => name.startsWith(prefix));
  };
  await waitFor('an insert before the outage', reported('before'));

  await first.stop();
  // Down long enough for the driver to give up resuming the stream (server selection: 2 s).
  await waitFor('the stream to be lost', () => !channel.crossProcess);
  const second = await startEmbeddedMongo({ port: first.port });
  servers.push(second);
  await waitFor('an insert after the outage', reported('after'));
  expect(channel.crossProcess).toBe(true);
  await channel.disconnect();
  expect(channel.crossProcess).toBe(false);
});

it('reports an insert made as soon as connect() returns (the stream starts where the probe answered)', async () => {
  const server = await startEmbeddedMongo({ port: 0 });
  servers.push(server);
  const own = await MongoClient.connect(server.uri, { serverSelectionTimeoutMS: 2000 });
  try {
    const db = own.db('channel_start');
    // Several rounds: each one a fresh channel and a single insert right after connect, never repeated.
    for (let round = 0; round < 5; round++) {
      const channel = new QueueNotificationChannel(db, `entries_${round}`, 'changestream');
      const seen: string[] = [];
      channel.subscribe((n) => {
        seen.push(n.jobName);
      });
      await channel.connect();
      await db.collection(`entries_${round}`).insertOne({ name: `first ${round}`, nextRunAt: new Date() });
      await waitFor(`round ${round}'s insert to be reported`, () => seen.includes(`first ${round}`));
      await channel.disconnect();
    }
  } finally {
    await own.close(true);
  }
});
