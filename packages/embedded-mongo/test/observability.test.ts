// The change log's byte bound, serverStatus and currentOp, through the driver. Each part starts its own
// embedded server (a small change-log bound; counters no other test file moves), so these run against
// the embedded server whatever MONGODB_URI says; every assertion is one mongod makes true as well.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoClient, MongoServerError, type Db, type Document } from 'mongodb';
import { startEmbeddedMongo, type EmbeddedMongo } from '../src/index.js';
import { until } from './helpers/until.js';

const MiB = 1024 * 1024;
/** A document of about 100 KB, so a few dozen writes pass a 1 MiB change log. */
const big = (n: number): Document => ({ n, pad: 'x'.repeat(100_000) });

type ChangelogStatus = { events: number; bytes: number; boundBytes: number; oldestEventTime: Date | null };
const changelog = async (db: Db): Promise<ChangelogStatus> => (await db.admin().command({ serverStatus: 1 })).embedded.changelog;

async function errorOf(p: Promise<unknown>): Promise<MongoServerError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(MongoServerError);
  return e as MongoServerError;
}

describe('the change log is bounded by bytes', () => {
  let server: EmbeddedMongo;
  let client: MongoClient;
  let db: Db;
  let collections = 0;
  const fresh = () => db.collection(`c${++collections}`);

  beforeAll(async () => {
    server = await startEmbeddedMongo({ changelogMb: 1 });
    client = await MongoClient.connect(server.uri);
    db = client.db('bounded');
  });

  afterAll(async () => {
    await client.close();
    await server.stop();
  });

  it('keeps the BSON size of its events under the bound while writes pass it many times over', async () => {
    const c = fresh();
    const stream = c.watch([], { maxAwaitTimeMS: 10 });
    expect(await stream.tryNext()).toBeNull(); // events are logged from the first stream on
    await stream.close();
    for (let i = 0; i < 40; i++) {
      await c.insertOne(big(i));
      const status = await changelog(db);
      expect(status.boundBytes).toBe(MiB);
      expect(status.bytes).toBeLessThanOrEqual(MiB);
      expect(status.events).toBeGreaterThan(0);
    }
    const status = await changelog(db);
    // 40 events of ~100 KB were written; about ten fit.
    expect(status.events).toBeLessThan(11);
    expect(status.bytes).toBeGreaterThan(MiB / 2);
  });

  // https://www.mongodb.com/docs/manual/changeStreams/#resume-a-change-stream: a stream resumes only
  // from a point still in the oplog; otherwise mongod answers ChangeStreamHistoryLost (286), an error
  // without the ResumableChangeStreamError label, so the driver reports it instead of resuming.
  it('refuses to resume from a token or a time no longer in the log, with ChangeStreamHistoryLost', async () => {
    const c = fresh();
    const stream = c.watch([], { maxAwaitTimeMS: 10 });
    expect(await stream.tryNext()).toBeNull();
    await c.insertOne({ small: true });
    const first = await stream.next();
    await stream.close();
    for (let i = 0; i < 20; i++) await c.insertOne(big(i));

    const rows: Array<{ name: string; options: Document }> = [
      { name: 'resumeAfter', options: { resumeAfter: first._id } },
      { name: 'startAfter', options: { startAfter: first._id } },
      { name: 'startAtOperationTime', options: { startAtOperationTime: first.clusterTime } },
    ];
    for (const { name, options } of rows) {
      const resumed = c.watch([], { ...options, maxAwaitTimeMS: 10 });
      const err = await errorOf(resumed.next());
      await resumed.close();
      expect({ name, code: err.code, codeName: err.codeName }).toEqual({ name, code: 286, codeName: 'ChangeStreamHistoryLost' });
      expect(err.message).toContain('Resume of change stream was not possible, as the resume point may no longer be in the oplog.');
      expect(err.hasErrorLabel('ResumableChangeStreamError')).toBe(false);
    }

    // A token still in the log resumes as before.
    const again = c.watch([], { maxAwaitTimeMS: 10 });
    expect(await again.tryNext()).toBeNull();
    await c.insertMany([{ k: 1 }, { k: 2 }]);
    const k1 = await again.next();
    await again.close();
    const resumed = c.watch([], { resumeAfter: k1._id, maxAwaitTimeMS: 10 });
    expect(await resumed.next()).toMatchObject({ operationType: 'insert', fullDocument: { k: 2 } });
    await resumed.close();
  });

  // An open stream whose next event was dropped before it read it has lost its place, as a stream on
  // mongod does when the oplog rolls over past it: its getMore fails with CappedPositionLost (136),
  // which drivers do not resume from (https://github.com/mongodb/specifications, change-streams.md,
  // "Resumable Error"), so the loss is reported, never skipped over.
  it('fails an open stream that fell behind past the bound with CappedPositionLost, and the driver reports it', async () => {
    const c = fresh();
    const stream = c.watch([], { maxAwaitTimeMS: 10 });
    expect(await stream.tryNext()).toBeNull();
    for (let i = 0; i < 20; i++) await c.insertOne(big(i));
    const err = await errorOf(stream.next());
    expect({ code: err.code, codeName: err.codeName }).toEqual({ code: 136, codeName: 'CappedPositionLost' });
    expect(err.hasErrorLabel('ResumableChangeStreamError')).toBe(false);
    expect(stream.closed).toBe(true);
  });

  it('keeps a waiting stream in place when the dropped events were all on other collections', async () => {
    const watched = fresh();
    const other = fresh();
    // The getMore waits for an event on `watched` while the log turns over with writes elsewhere.
    const stream = watched.watch([], { maxAwaitTimeMS: 600_000 });
    const next = stream.next();
    await until(async () => (await client.db('admin').aggregate([{ $currentOp: {} }, { $match: { op: 'getmore', ns: watched.namespace } }]).toArray()).length === 1, 'the awaiting getMore');
    for (let i = 0; i < 20; i++) await other.insertOne(big(i));
    await watched.insertOne({ mine: true });
    expect(await next).toMatchObject({ operationType: 'insert', fullDocument: { mine: true } });
    await stream.close();
  });

  it('takes its bound from --changelog-mb', async () => {
    const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.ts');
    const child = spawn(process.execPath, ['--import', 'tsx/esm', cli, '--port=0', '--changelog-mb=3'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const uri = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /MONGODB_URI=(\S+)/.exec(out);
          if (m) resolve(m[1]);
        });
        child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
      });
      const other = await MongoClient.connect(uri);
      expect((await changelog(other.db('admin'))).boundBytes).toBe(3 * MiB);
      await other.close();
    } finally {
      child.kill('SIGTERM');
    }
  });
});

describe('serverStatus', () => {
  let server: EmbeddedMongo;
  let client: MongoClient;
  let db: Db;

  beforeAll(async () => {
    server = await startEmbeddedMongo();
    // No heartbeat during the test: the monitor's hello would count as a command.
    client = await MongoClient.connect(server.uri, { heartbeatFrequencyMS: 3_600_000, maxPoolSize: 1 });
    db = client.db('status');
  });

  afterAll(async () => {
    await client.close();
    await server.stop();
  });

  const status = async (): Promise<Document> => db.admin().command({ serverStatus: 1 });

  // https://www.mongodb.com/docs/manual/reference/command/serverStatus/#opcounters: insert counts each
  // document, update and delete each statement; find and aggregate count as queries; getMore on its
  // own; every other command (serverStatus included) as a command, the write commands excepted.
  it('counts operations as mongod does', async () => {
    const c = db.collection('counted');
    const before = (await status()).opcounters;
    await c.insertMany([{ a: 1 }, { a: 2 }, { a: 3 }]);
    await c.insertOne({ a: 4 });
    expect(await c.find({}, { batchSize: 3 }).toArray()).toHaveLength(4); // a find and one getMore
    await c.updateMany({}, { $set: { b: 1 } });
    await c.bulkWrite([{ updateOne: { filter: { a: 1 }, update: { $set: { c: 1 } } } }, { updateOne: { filter: { a: 2 }, update: { $set: { c: 1 } } } }]);
    await c.deleteOne({ a: 1 });
    await c.deleteMany({ a: { $gt: 2 } });
    await c.aggregate([{ $match: { a: 2 } }]).toArray();
    await db.command({ ping: 1 });
    await db.command({ ping: 1 });
    const after = (await status()).opcounters;
    const delta = Object.fromEntries(Object.keys(before).map((k) => [k, Number(after[k]) - Number(before[k])]));
    expect(delta).toEqual({ insert: 4, query: 2, update: 3, delete: 2, getmore: 1, command: 3 });
  });

  it('counts the documents an ordered insert tried, up to and including the one that failed', async () => {
    const c = db.collection('dups');
    await c.insertOne({ _id: 2 as never });
    const before = Number((await status()).opcounters.insert);
    await c.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }] as never[]).catch(() => undefined);
    expect(Number((await status()).opcounters.insert) - before).toBe(2);
  });

  it('reports open connections, those created so far and the active ones', async () => {
    const first = (await status()).connections;
    expect(first.active).toBeGreaterThanOrEqual(1); // the connection running serverStatus
    expect(first.current + first.available).toBeGreaterThan(first.current);
    const other = await MongoClient.connect(server.uri);
    await other.db('admin').command({ ping: 1 });
    const opened = (await status()).connections;
    // The other client holds at least a monitoring connection and a pooled one.
    expect(opened.current).toBeGreaterThanOrEqual(first.current + 2);
    expect(opened.totalCreated).toBeGreaterThanOrEqual(first.totalCreated + 2);
    await other.close();
    await until(async () => (await status()).connections.current === first.current, 'the closed client to disconnect');
  });

  it('reports uptime, local time, memory, open cursors and the change log', async () => {
    const c = db.collection('cursors');
    await c.insertMany([{ a: 1 }, { a: 2 }, { a: 3 }]);
    const cursor = c.find({}, { batchSize: 1 });
    await cursor.next(); // the cursor stays open on the server
    const s = await status();
    expect(s.uptime).toBeGreaterThanOrEqual(0);
    expect(s.uptimeMillis).toBeGreaterThanOrEqual(0);
    expect(s.localTime).toBeInstanceOf(Date);
    expect(s.mem.resident).toBeGreaterThan(0);
    expect(s.metrics.cursor.open.total).toBeGreaterThanOrEqual(1);
    await cursor.close();
    expect((await status()).metrics.cursor.open.total).toBe(Number(s.metrics.cursor.open.total) - 1);
    expect(s.embedded.changelog).toMatchObject({ boundBytes: 64 * MiB });
  });
});

describe('currentOp', () => {
  let server: EmbeddedMongo;
  let client: MongoClient;
  let watcher: MongoClient;
  let db: Db;

  beforeAll(async () => {
    server = await startEmbeddedMongo();
    client = await MongoClient.connect(server.uri);
    watcher = await MongoClient.connect(server.uri, { appName: 'currentop-watcher' });
    db = client.db('ops');
  });

  afterAll(async () => {
    await watcher.close();
    await client.close();
    await server.stop();
  });

  const ops = (spec: Document, match: Document = {}): Promise<Document[]> => client.db('admin').aggregate([{ $currentOp: spec }, { $match: match }]).toArray();

  // https://www.mongodb.com/docs/manual/reference/operator/aggregation/currentOp/: a getMore waiting on
  // a change stream is an active operation with its cursor; once it has answered, the cursor is idle
  // and listed only with idleCursors: true, as type 'idleCursor'.
  it('lists a change stream getMore while it waits, then its cursor as idle', async () => {
    const c = watcher.db('ops').collection('watched');
    await db.createCollection('watched');
    const stream = c.watch([], { maxAwaitTimeMS: 600_000 });
    const next = stream.next();
    const [op] = await until(async () => {
      const found = await ops({}, { op: 'getmore', ns: 'ops.watched' });
      return found.length === 1 && found;
    }, 'the waiting getMore');
    expect(op).toMatchObject({ type: 'op', active: true, appName: 'currentop-watcher', command: { collection: 'watched' } });
    expect(typeof op.opid).toBe('number');
    expect(typeof op.connectionId).toBe('number');
    expect(typeof op.client).toBe('string');
    expect(op.microsecs_running).toBeGreaterThanOrEqual(0);
    expect(op.cursor).toMatchObject({ tailable: true, awaitData: true, nDocsReturned: 0 });
    expect(op.cursor.originatingCommand.pipeline[0]).toHaveProperty('$changeStream');

    // The currentOp command filters with the same query language.
    const { inprog } = await client.db('admin').command({ currentOp: 1, op: 'getmore', ns: 'ops.watched' });
    expect(inprog.map((o: Document) => o.opid)).toEqual([op.opid]);

    await db.collection('watched').insertOne({ x: 1 });
    expect(await next).toMatchObject({ operationType: 'insert' });
    await until(async () => (await ops({}, { op: 'getmore', ns: 'ops.watched' })).length === 0, 'the getMore to answer');
    const idle = await ops({ idleCursors: true }, { type: 'idleCursor', ns: 'ops.watched' });
    expect(idle).toHaveLength(1);
    expect(idle[0].cursor).toMatchObject({ tailable: true, awaitData: true, nDocsReturned: 1, nBatchesReturned: 2 });
    expect(await ops({}, { type: 'idleCursor' })).toEqual([]);
    await stream.close();
  });

  it('lists the command running $currentOp itself as active', async () => {
    const mine = await client
      .db('admin')
      .aggregate([{ $currentOp: {} }, { $match: { 'command.comment': 'find me' } }], { comment: 'find me' })
      .toArray();
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ type: 'op', active: true, op: 'command', ns: 'admin.$cmd.aggregate', command: { aggregate: 1 } });
  });

  // https://www.mongodb.com/docs/manual/reference/command/currentOp/#mongodb-data-currentOp.command:
  // the currentOp command reports a command over 1 KB as {$truncated: <summary>, comment}.
  it('truncates a command over 1 KB in the currentOp command, keeping its comment', async () => {
    const tag = 'z'.repeat(1500);
    const { inprog } = await client.db('admin').command({ currentOp: 1, 'command.comment': tag, comment: tag });
    expect(inprog).toHaveLength(1);
    expect(inprog[0].command.comment).toBe(tag);
    expect(typeof inprog[0].command.$truncated).toBe('string');
    expect(inprog[0].command.currentOp).toBeUndefined();
  });

  it('lists idle connections only with idleConnections: true', async () => {
    await watcher.db('admin').command({ ping: 1 });
    expect((await ops({})).every((o) => o.active === true)).toBe(true);
    const all = await ops({ idleConnections: true, allUsers: true, localOps: true, idleSessions: false });
    expect(all.some((o) => o.active === false && o.appName === 'currentop-watcher')).toBe(true);
  });

  // Options are checked as mongod 7.0 checks them; $currentOp runs only as {aggregate: 1} on admin.
  const refusals: Array<{ name: string; run: () => Promise<unknown>; code: number }> = [
    { name: 'an unknown option', run: () => ops({ everything: true }), code: 40415 },
    { name: 'a non-boolean allUsers', run: () => ops({ allUsers: 1 }), code: 14 },
    { name: 'a non-boolean idleCursors', run: () => ops({ idleCursors: 'yes' }), code: 14 },
    { name: 'another database', run: () => db.aggregate([{ $currentOp: {} }]).toArray(), code: 73 },
  ];
  it.each(refusals)('refuses $name', async ({ run, code }) => {
    expect((await errorOf(run())).code).toBe(code);
  });
});
