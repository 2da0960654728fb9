// Issue 19, item 9, through real processes: a burst of image creates, each with its own
// Idempotency-Key and retried (same key, same body) until it gets a 2xx, while the database (its own
// process, persisting to a directory) is killed with SIGKILL and restarted on the same port. Whatever
// the interleaving, every key must end with exactly one charged job, the one its 2xx named, and the
// credits taken must be exactly the images of those jobs.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Connection } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { connectDatabase } from '../../src/data/connection.js';
import type { JobDoc } from '../../src/data/models/job.js';
import { buildApp } from '../../src/http/app.js';
import { buildServices, type Services } from '../../src/services.js';
import { until } from '../helpers/until.js';
import { startDbProcess, type DbProcess } from './db-process.js';

const KEYS = 40;
const PROMPTS = ['a red fox', 'a blue owl'];
const START = 1000;
const dbPath = fs.mkdtempSync(path.join(os.tmpdir(), 'keyed-create-outage-'));
let db: DbProcess;
let connection: Connection;
let services: Services;
let app: FastifyInstance;
let base: string;

beforeAll(async () => {
  db = await startDbProcess(dbPath);
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', MONGODB_URI: db.uri, IN_PROCESS_WORKER: 'false' });
  connection = await connectDatabase(db.uri, { dbName: 'keyed_outage', serverSelectionTimeoutMS: 2000 });
  // A short idempotency lock: a key left running by a killed request is taken over within a second.
  services = await buildServices(config, { connection, keyChanges: 'poll', idempotencyLockMs: 1000 });
  app = await buildApp({ config, services, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await app?.close();
  await services?.close().catch(() => undefined);
  await connection?.close(true).catch(() => undefined);
  db?.kill('SIGKILL');
  await db?.exited;
  fs.rmSync(dbPath, { recursive: true, force: true });
});

/** Sends the keyed create until it gets a 2xx: 503s, 409s and dropped connections are retried. */
async function createUntilAccepted(apiKey: string, idempotencyKey: string, deadline: number): Promise<{ jobId: string; statuses: number[] }> {
  const statuses: number[] = [];
  for (;;) {
    if (Date.now() > deadline) throw new Error(`${idempotencyKey}: no 2xx by the deadline (statuses ${statuses.join(',')})`);
    const res = await fetch(`${base}/api/playground/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ prompts: PROMPTS }),
    }).catch(() => null);
    statuses.push(res?.status ?? 0);
    if (res && res.status < 300) return { jobId: ((await res.json()) as { jobId: string }).jobId, statuses };
    await res?.body?.cancel();
    if (res && res.status !== 503 && res.status !== 409) throw new Error(`${idempotencyKey}: unexpected ${res.status}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('keyed image creates through a database kill', () => {
  it('each key ends with exactly one charged job, the one its 2xx named; credits taken = images of those jobs', async () => {
    const actor = { actor: 'test', ip: null, host: 'test' };
    const account = await services.credits.createAccount('keyed outage', START, actor);
    const key = await services.keys.create(account.id, 'k', actor);
    const deadline = Date.now() + 90_000;
    let accepted = 0;
    const clients = Array.from({ length: KEYS }, (_, i) =>
      createUntilAccepted(key.key, `order-${i}`, deadline).then((r) => {
        accepted++;
        return r;
      }),
    );
    // Kill the database mid-burst (some keys answered, the rest in flight), then bring it back.
    await until(() => accepted >= 5, 'five keys answered', { timeoutMs: 60_000 });
    const port = db.port;
    db.kill('SIGKILL');
    await db.exited;
    db = await startDbProcess(dbPath, port);
    const results = await Promise.all(clients);
    const retried = results.filter((r) => r.statuses.length > 1).length;

    // Whatever a killed request left unaccepted is withdrawn by the sweep (run as if an hour later).
    await services.imageJobs.sweeper.sweep(new Date(Date.now() + 3_600_000));
    const jobs = await connection.db!.collection<JobDoc>('jobs').find({ accountId: account.id }).toArray();
    const answered = results.map((r) => r.jobId).sort();
    expect(new Set(answered).size).toBe(KEYS);
    expect(jobs.filter((j) => !j.charged)).toEqual([]);
    expect(jobs.map((j) => j._id).sort()).toEqual(answered);
    const [balance] = await services.credits.balances([account.id]);
    expect(START - balance!).toBe(jobs.reduce((n, j) => n + j.creditsUsed, 0));
    expect(START - balance!).toBe(KEYS * PROMPTS.length);
    // Retrying any key now replays its job.
    const again = await createUntilAccepted(key.key, 'order-0', Date.now() + 30_000);
    expect(again.jobId).toBe(results[0]!.jobId);
    // Not an assertion of the fix, but of the test: the kill must have hit requests in flight.
    expect(retried, 'no request was retried: the kill came after the burst').toBeGreaterThan(0);
  }, 120_000);
});
