// An event survives kill -9: a gateway and a standalone worker, each its own process on the suite's
// database, deliver to a receiver that is down; both processes are killed with SIGKILL once the
// event is in the database; with the receiver back (same port), a new worker delivers it, signed,
// with the webhook-id the event was given. Waits are on conditions with generous deadlines.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawnWorker, type WorkerProcess } from '../images/worker-process.js';
import { until } from '../helpers/until.js';
import { startReceiver, type Receiver } from './receiver.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DB = 'wh_crash';
const uri = `${inject('mongoUri')}${DB}`;
const env = {
  MONGODB_URI: uri,
  IN_PROCESS_WORKER: 'false',
  WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
  WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s,1s',
  JOB_SWEEP_INTERVAL_MS: '1000',
};

interface Gateway {
  child: ChildProcess;
  base: string;
  key: string;
}

/** `src/main.ts` as `npm start` runs it, on the shared database: its address and the demo key it prints. */
function startGateway(): Promise<Gateway> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'development', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    let base = '';
    createInterface({ input: child.stdout! }).on('line', (line) => {
      base ||= /^Gateway listening on (\S+) /.exec(line)?.[1] ?? '';
      const key = /^\s+(wi_live_[0-9a-f]{64})$/.exec(line)?.[1];
      if (key) resolve({ child, base, key });
    });
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}): ${stderr}`)));
  });
}

let client: MongoClient;
let receiver: Receiver | undefined;
const children: ChildProcess[] = [];
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  client = await MongoClient.connect(uri);
  await client.db(DB).dropDatabase();
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const w of workers) if (w.proc.exitCode === null && w.proc.signalCode === null) w.kill('SIGKILL');
  await Promise.all(workers.map((w) => w.exited));
  await receiver?.close();
  await client?.close();
});

describe('kill -9 while the receiver is down', () => {
  it('the event is delivered once processes and receiver are back, with its webhook-id', async () => {
    const gateway = await startGateway();
    children.push(gateway.child);
    const worker = spawnWorker(env);
    workers.push(worker);
    await worker.ready;

    receiver = await startReceiver();
    const port = receiver.port;
    const auth = { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json' };
    const created = await (await fetch(`${gateway.base}/api/webhooks`, { method: 'POST', headers: auth, body: JSON.stringify({ url: receiver.url, events: ['job.completed'] }) })).json();
    expect(created.secret).toMatch(/^whsec_/);
    const secret = created.secret as string;
    // The receiver goes down before the event exists.
    await receiver.close();
    receiver = undefined;

    const job = await (await fetch(`${gateway.base}/api/playground/images`, { method: 'POST', headers: auth, body: JSON.stringify({ prompts: ['survive'] }) })).json();
    expect(job.jobId).toEqual(expect.any(String));
    const deliveries = client.db(DB).collection<{ _id: string; eventId: string; attempts: unknown[]; status: string }>('webhookDeliveries');
    // Written, attempted and failed (connection refused) at least once: the event lives in the database.
    await until(async () => ((await deliveries.findOne({}))?.attempts.length ?? 0) >= 1, 'a failed attempt recorded', { timeoutMs: 60_000 });
    const stored = (await deliveries.findOne({}))!;
    expect(stored.status).toBe('pending');

    worker.kill('SIGKILL');
    gateway.child.kill('SIGKILL');
    await worker.exited;
    await new Promise((r) => (gateway.child.exitCode !== null || gateway.child.signalCode !== null ? r(undefined) : gateway.child.once('exit', r)));

    // Worse still: the queue entry of the next attempt is gone too (as if the worker died between
    // recording the failed attempt and scheduling the next). The sweep finds the due delivery.
    await client.db(DB).collection('agendaJobs').deleteMany({ name: 'webhook.deliver' });

    receiver = await startReceiver({ port });
    receiver.secret = secret;
    const next = spawnWorker(env);
    workers.push(next);
    await next.ready;
    await until(() => (receiver?.received.length ?? 0) >= 1, 'the delivery after the restart', { timeoutMs: 60_000 });
    const [delivery] = receiver.received;
    expect(delivery.verified, delivery.error).toBe(true);
    expect(delivery.id).toBe(stored.eventId);
    expect(delivery.body).toMatchObject({ type: 'job.completed', data: { jobId: job.jobId, status: 'completed' } });
    await until(async () => (await deliveries.findOne({ _id: stored._id }))?.status === 'succeeded', 'the delivery recorded as succeeded');
    expect(receiver.received.filter((r) => r.statusCode < 300)).toHaveLength(1);
  });
});
