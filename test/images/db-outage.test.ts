// A standalone worker through a database outage, all real processes: the embedded database (its own
// process, persisting to a directory) is killed with SIGKILL while images are running and queued, the
// worker must keep running, and once the database is back on the same port and directory the worker
// finishes the queued images by itself. Then SIGTERM while the database is down: a prompt, clean exit.
// Waits are on conditions (log lines, job state) with generous deadlines: CI is a busy 2-core machine.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MongoClient } from 'mongodb';
import type { Connection } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { MongoAccountStore } from '../../src/data/accounts.js';
import { MongoAuditStore } from '../../src/data/audit.js';
import { connectDatabase } from '../../src/data/connection.js';
import type { JobDoc } from '../../src/data/models/job.js';
import { CreditService } from '../../src/domain/credits/service.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.js';
import { openTestImageJobs } from './image-jobs.js';
import { startDbProcess, type DbProcess } from './db-process.js';
import { spawnWorker, type WorkerProcess } from './worker-process.js';

const DB_NAME = 'outage';
const dbPath = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-outage-'));
let db: DbProcess;
let fake: FakeOpenAi;
let connection: Connection;
let imageJobs: Awaited<ReturnType<typeof openTestImageJobs>>;
let accountId: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  db = await startDbProcess(dbPath);
  fake = await startFakeOpenAi();
  connection = await connectDatabase(db.uri, { dbName: DB_NAME, serverSelectionTimeoutMS: 10_000 });
  // This process only creates jobs (as a gateway would); the worker processes run them.
  const credits = new CreditService({ accounts: new MongoAccountStore(connection), audit: new MongoAuditStore(connection), host: 'test' });
  imageJobs = await openTestImageJobs(loadConfig({ NODE_ENV: 'test' }), connection, credits);
  accountId = (await credits.createAccount('outage', 100, { actor: 'test', ip: '127.0.0.1', host: 'test' })).id;
});

afterAll(async () => {
  for (const w of workers) {
    w.kill('SIGKILL');
    await w.exited;
  }
  await imageJobs?.close().catch(() => undefined);
  await connection?.close(true).catch(() => undefined);
  db?.kill('SIGKILL');
  await db?.exited;
  await fake?.close();
  fs.rmSync(dbPath, { recursive: true, force: true });
});

function startWorker(): WorkerProcess {
  const w = spawnWorker({
    MONGODB_URI: `${db.uri}${DB_NAME}`,
    IMAGE_PROVIDER: 'openai',
    IMAGE_API_URL: fake.url,
    IMAGE_RETRIES: '0',
    IMAGE_TIMEOUT_MS: '20000',
    // Claims cut short by the outage count as attempts: leave room, this test is about resuming.
    IMAGE_MAX_ATTEMPTS: '10',
    WORKER_CONCURRENCY: '2',
    JOB_LOCK_LIFETIME_MS: '2000',
    JOB_SWEEP_INTERVAL_MS: '1000',
    QUEUE_POLL_INTERVAL_MS: '100',
  });
  workers.push(w);
  return w;
}

async function waitFor<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${workers.map((w) => w.output().slice(-3000)).join('\n---\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Worker log lines (JSON) with this message. */
function logLines(w: WorkerProcess, msg: string): Record<string, unknown>[] {
  return w
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === msg);
}

const alive = (w: WorkerProcess) => w.proc.exitCode === null && w.proc.signalCode === null;

describe('standalone worker and a database outage', () => {
  it('keeps running while the database is down and finishes the queued images once it is back', async () => {
    const w = startWorker();
    await w.ready;
    const prompts = ['[slow:1500] outage 0', '[slow:1500] outage 1', '[slow:300] outage 2', '[slow:300] outage 3'];
    const { jobId } = await imageJobs.service.create({ accountId, keyId: null }, prompts);
    // Two images in the provider (concurrency 2), the others queued or done: then the database dies.
    const inFlight = await waitFor('two images in the provider', () => {
      const generating = prompts.filter((p) => fake.calls.get(p) === 1 && !fake.served.has(p));
      return generating.length === 2 && generating;
    }, 20_000);
    db.kill('SIGKILL');
    await db.exited;

    await waitFor('the worker to see the outage', () => logLines(w, 'database connection lost').length > 0, 20_000);
    // The running images come back from the provider and cannot be stored.
    await waitFor('the in-flight generations to end', () => inFlight.every((p) => fake.served.get(p) === 1), 20_000);
    // Keep the database down until the worker has summarized the outage (10 s after it began): every
    // poll, sweep and heartbeat has failed many times over by then.
    await waitFor('the outage summary', () => logLines(w, 'queue still paused: database unreachable').length > 0, 60_000);
    expect(alive(w), w.output().slice(-3000)).toBe(true);

    const port = db.port;
    db = await startDbProcess(dbPath, port);
    const restartedAt = Date.now();
    const client = await MongoClient.connect(`${db.uri}${DB_NAME}`, { serverSelectionTimeoutMS: 10_000 });
    try {
      const done = await waitFor('the job to finish after the restart', async () => {
        const doc = await client.db().collection<JobDoc>('jobs').findOne({ _id: jobId });
        return doc && (doc.status === 'completed' || doc.status === 'failed') ? doc : undefined;
      }, 90_000);
      const resumedMs = Date.now() - restartedAt;
      console.log(`[outage] job final ${resumedMs} ms after the database restarted`);
      expect(done).toMatchObject({ status: 'completed', succeededImages: 4, failedImages: 0, creditsRefunded: 0 });
      expect(await client.db().collection('images.files').countDocuments({ 'metadata.jobId': jobId })).toBe(4);
    } finally {
      await client.close();
    }
    expect(logLines(w, 'database connection back').length).toBeGreaterThan(0);
    // Every driver error was handled where it arose, none reached the process-level backstop.
    expect(logLines(w, 'unhandled database error')).toEqual([]);
    expect(alive(w)).toBe(true);
    w.kill('SIGTERM');
    expect(await w.exited, w.output().slice(-3000)).toBe(0);
  }, 240_000);

  it('SIGTERM while the database is down: exits 0 promptly, and the image is finished later', async () => {
    const w = startWorker();
    await w.ready;
    const prompt = '[slow:1000] stopped during an outage';
    const { jobId } = await imageJobs.service.create({ accountId, keyId: null }, [prompt]);
    await waitFor('the provider call', () => fake.calls.get(prompt) === 1, 20_000);
    db.kill('SIGKILL');
    await db.exited;
    await waitFor('the worker to see the outage', () => logLines(w, 'database connection lost').length > 0, 20_000);

    w.kill('SIGTERM');
    // Bounded: the drain gives up on images whose results cannot be stored, closing does not wait for the database.
    const code = await Promise.race([w.exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000).unref())]);
    expect(code, w.output().slice(-3000)).toBe(0);
    expect(logLines(w, 'worker stopped').length).toBe(1);

    // Nothing was lost: another worker finishes the image once the database is back.
    db = await startDbProcess(dbPath, db.port);
    const next = startWorker();
    await next.ready;
    const client = await MongoClient.connect(`${db.uri}${DB_NAME}`, { serverSelectionTimeoutMS: 10_000 });
    try {
      const done = await waitFor('the job to finish', async () => {
        const doc = await client.db().collection<JobDoc>('jobs').findOne({ _id: jobId });
        return doc && (doc.status === 'completed' || doc.status === 'failed') ? doc : undefined;
      }, 90_000);
      expect(done).toMatchObject({ status: 'completed', succeededImages: 1 });
    } finally {
      await client.close();
    }
    next.kill('SIGTERM');
    expect(await next.exited, next.output().slice(-3000)).toBe(0);
  }, 240_000);

  it('started while the database is down: waits for it (SIGTERM meanwhile exits 0), then works', async () => {
    db.kill('SIGKILL');
    await db.exited;
    const waiting = startWorker();
    const stopped = startWorker();
    for (const w of [waiting, stopped]) {
      await waitFor('the worker to wait for the database', () => logLines(w, 'database unreachable at startup: waiting for it').length > 0, 60_000);
    }
    stopped.kill('SIGTERM');
    expect(await stopped.exited, stopped.output().slice(-3000)).toBe(0);
    expect(alive(waiting), waiting.output().slice(-3000)).toBe(true);

    db = await startDbProcess(dbPath, db.port);
    await waiting.ready;
    const { jobId } = await imageJobs.service.create({ accountId, keyId: null }, ['after a late start']);
    await waitFor('the job to finish', async () => {
      const job = await imageJobs.store.findById(jobId);
      return job?.status === 'completed';
    }, 60_000);
    waiting.kill('SIGTERM');
    expect(await waiting.exited, waiting.output().slice(-3000)).toBe(0);
  }, 240_000);
});
