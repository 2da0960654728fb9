import { randomUUID } from 'node:crypto';
import { MongoClient, type Collection, type Db, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { JobRecord } from '../../src/domain/jobs/records.js';
import { MongoJobEvents, type JobEventsMode } from '../../src/queue/job-events.js';
import { until } from '../helpers/until.js';

/** Cross-process job events against the test database: both sources, one watcher per process. */

let client: MongoClient;
let db: Db;
let jobs: Collection<Document>;

beforeAll(async () => {
  client = await MongoClient.connect(inject('mongoUri'));
  db = client.db(`job_events_${process.pid}`);
  jobs = db.collection('jobs');
});

afterAll(async () => {
  await client?.db(`job_events_${process.pid}`).dropDatabase().catch(() => undefined);
  await client?.close();
});

function jobDoc(id: string) {
  const now = new Date();
  return {
    _id: id,
    accountId: 'a'.repeat(24),
    keyId: 'b'.repeat(24),
    status: 'queued',
    totalImages: 1,
    succeededImages: 0,
    failedImages: 0,
    creditsUsed: 1,
    creditsRefunded: 0,
    charged: true,
    images: [{ index: 0, prompt: 'p', status: 'queued', attempt: 0, fileId: null, error: null, refund: 'none', startedAt: null, heartbeatAt: null, finishedAt: null }],
    createdAt: now,
    updatedAt: now,
    completedAt: null,
  };
}

describe.each<JobEventsMode>(['changestream', 'poll'])('MongoJobEvents (%s)', (mode) => {
  it('fans each change of a watched job out to all its listeners, once, and ignores other jobs', async () => {
    let watchCalls = 0;
    const countingDb = new Proxy(db, {
      get(target, prop) {
        if (prop !== 'collection') return Reflect.get(target, prop, target);
        return (name: string) => {
          const col = target.collection(name);
          return new Proxy(col, {
            get(c, p) {
              if (p === 'watch') watchCalls++;
              const v = Reflect.get(c, p, c);
              return typeof v === 'function' ? v.bind(c) : v;
            },
          });
        };
      },
    });
    const events = new MongoJobEvents({ db: countingDb, mode, pollMs: 50 });
    if (mode === 'changestream' && !(await hasChangeStreams())) {
      // JOB_EVENTS=changestream on a deployment without them (a standalone MONGODB_URI) is refused.
      await expect(events.ready()).rejects.toThrow();
      return;
    }
    await events.ready();
    try {
      expect(events.activeMode).toBe(mode);
      const id = randomUUID();
      const other = randomUUID();
      await jobs.insertMany([jobDoc(id), jobDoc(other)] as never[]);
      const received: JobRecord[][] = Array.from({ length: 20 }, () => []);
      const offs = received.map((list) => events.subscribe(id, (job) => list.push(job)));
      const otherSeen: JobRecord[] = [];
      events.subscribe(other, (job) => otherSeen.push(job));

      await jobs.updateOne({ _id: id } as never, { $set: { status: 'running', 'images.0.status': 'running', updatedAt: new Date(Date.now() + 5) } });
      const running = await until(() => received[0].find((j) => j.status === 'running'), 'the running state');
      expect(running.id).toBe(id);
      expect(running.images[0].status).toBe('running');
      // A write that changes nothing a client sees (a heartbeat) is not an event.
      await jobs.updateOne({ _id: id } as never, { $set: { 'images.0.heartbeatAt': new Date() } });
      await jobs.updateOne({ _id: id } as never, { $set: { status: 'completed', updatedAt: new Date(Date.now() + 10) } });
      await until(() => received.every((l) => l.some((j) => j.status === 'completed')), 'the completed state on every listener');
      for (const list of received) {
        // The insert may or may not reach listeners (it raced their subscribing); every later change does, once.
        const statuses = list.map((j) => j.status);
        expect(statuses.slice(statuses.indexOf('running'))).toEqual(['running', 'completed']);
        expect(statuses.slice(0, statuses.indexOf('running'))).toEqual(statuses[0] === 'queued' ? ['queued'] : []);
      }
      // Whatever the number of subscribers: one stream, or none at all when polling.
      expect(watchCalls).toBe(mode === 'changestream' ? 1 : 0);
      for (const off of offs) off();
      expect(events.listenerCount()).toBe(1);
    } finally {
      await events.close();
    }
  });
});

async function hasChangeStreams(): Promise<boolean> {
  const probe = jobs.watch([], { maxAwaitTimeMS: 1 });
  try {
    await probe.tryNext();
    return true;
  } catch {
    return false;
  } finally {
    await probe.close().catch(() => undefined);
  }
}

it('auto picks change streams where the deployment has them', async () => {
  const events = new MongoJobEvents({ db, mode: 'auto', pollMs: 50 });
  await events.ready();
  try {
    expect(['changestream', 'poll']).toContain(events.activeMode);
    expect(events.activeMode).toBe((await hasChangeStreams()) ? 'changestream' : 'poll');
  } finally {
    await events.close();
  }
});
