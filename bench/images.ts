/**
 * Image pipeline benchmark (`npx tsx bench/images.ts`): a gateway in this process, standalone worker
 * processes (`workers/main.ts`, builtin provider) on the same database (embedded unless MONGODB_URI).
 * Prints:
 *  - enqueue-to-first-image-start latency, p50/p99, with an idle worker (POST sent → image claimed);
 *  - images/s draining a 2,000-image backlog with one and with two workers;
 *  - how many images were generated more than once (must be 0).
 * Env: BENCH_LATENCY_SAMPLES (200), BENCH_BACKLOG (2000), WORKER_CONCURRENCY (worker default),
 * BENCH_WORKER_NODE_ARGS (extra node flags for the workers, e.g. --cpu-prof), BENCH_WEBHOOK=1 (a
 * webhook endpoint on 127.0.0.1 registered for every event: what delivering them costs the pipeline).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { connectDatabase } from '../src/data/connection.js';
import { startEmbeddedMongo, type EmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { buildApp } from '../src/http/app.js';
import { buildServices } from '../src/services.js';
import { cpuMicros } from '../packages/embedded-mongo/bench/proc-stats.js';
import { pct, say, sleep } from './report.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 200);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 2000);
const PER_JOB = 50;
const WEBHOOK = process.env.BENCH_WEBHOOK === '1';
/** Webhook deliveries the receiver acknowledged (BENCH_WEBHOOK=1). */
let webhooksReceived = 0;

interface Worker {
  proc: ChildProcess;
  ready: Promise<void>;
  exited: Promise<number | null>;
}

let embedded: EmbeddedMongo | undefined;
const workers: Worker[] = [];

async function main(): Promise<void> {
  let uri = process.env.MONGODB_URI;
  if (!uri) {
    embedded = await startEmbeddedMongo({ port: 0 });
    uri = embedded.uri;
  }
  const dbName = `bench_images_${Date.now()}`;
  const dbUri = new URL(uri);
  dbUri.pathname = `/${dbName}`;
  const config = loadConfig({
    NODE_ENV: 'production',
    LOG_LEVEL: 'silent',
    MONGODB_URI: dbUri.toString(),
    IN_PROCESS_WORKER: 'false',
    WEBHOOK_ALLOW_PRIVATE_URLS: WEBHOOK ? 'true' : 'false',
  });
  const connection = await connectDatabase(dbUri.toString());
  const services = await buildServices(config, { connection, role: 'bench-gateway' });
  const app = await buildApp({ config, services, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const actor = { actor: 'bench', ip: null, host: 'bench' };
  const account = await services.credits.createAccount('bench', 10_000_000, actor);
  const { key } = await services.keys.create(account.id, 'bench', actor);
  const store = services.imageJobs.store;
  if (WEBHOOK) await services.webhooks.create(account.id, { url: await startReceiver() }, base);
  const db = connection.db!;

  const post = async (prompts: string[]) => {
    const res = await fetch(`${base}/api/playground/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompts }),
    });
    if (res.status !== 201) throw new Error(`POST ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { jobId: string }).jobId;
  };
  const waitAllFinal = async (jobIds: string[], timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const open = await db.collection('jobs').countDocuments({ _id: { $in: jobIds as never[] }, status: { $in: ['queued', 'running'] } });
      if (open === 0) return;
      if (Date.now() > deadline) throw new Error(`${open} jobs still open`);
      await sleep(50);
    }
  };

  say(
    `image bench: ${SAMPLES} latency samples, ${BACKLOG}-image backlog, builtin provider, database ${embedded ? 'embedded' : 'MONGODB_URI'}` +
      (WEBHOOK ? ', a webhook endpoint registered for every event' : ''),
  );

  // 1. Enqueue-to-start with an idle worker: one single-image job at a time.
  const w1 = startWorker(dbUri.toString(), 'latency');
  await w1.ready;
  await sleep(500);
  const latencies: number[] = [];
  const fromEnqueue: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const sent = Date.now();
    const jobId = await post([`latency sample ${i}`]);
    await waitAllFinal([jobId], 10_000);
    const job = await store.findById(jobId);
    latencies.push(job!.images[0].startedAt!.getTime() - sent);
    fromEnqueue.push(job!.images[0].startedAt!.getTime() - job!.createdAt.getTime());
  }
  say(`enqueue→first image start, POST sent: p50 ${pct(latencies, 50)} ms, p99 ${pct(latencies, 99)} ms (${SAMPLES} jobs, idle worker)`);
  say(`                 job stored→start:     p50 ${pct(fromEnqueue, 50)} ms, p99 ${pct(fromEnqueue, 99)} ms`);
  await stopWorker(w1);

  // 2. Backlog drains with one and with two workers.
  for (const n of [1, 2]) {
    const jobIds: string[] = [];
    for (let j = 0; j < BACKLOG / PER_JOB; j++) {
      jobIds.push(await post(Array.from({ length: PER_JOB }, (_, i) => `backlog ${n} job ${j} image ${i}`)));
    }
    const ws = Array.from({ length: n }, (_, i) => startWorker(dbUri.toString(), `drain-${n}-${i}`));
    await Promise.all(ws.map((w) => w.ready));
    const workerCpu0 = ws.map((w) => cpuMicros(w.proc.pid!));
    const ownCpu0 = process.cpuUsage();
    await waitAllFinal(jobIds, 600_000);
    const workerCpu = ws.reduce((sum, w, i) => sum + cpuMicros(w.proc.pid!) - workerCpu0[i], 0);
    const ownCpu = process.cpuUsage(ownCpu0);
    const [span] = await db
      .collection('jobs')
      .aggregate<{ first: Date; last: Date; images: number; reruns: number }>([
        { $match: { _id: { $in: jobIds } } },
        { $unwind: '$images' },
        {
          $group: {
            _id: null,
            first: { $min: '$images.startedAt' },
            last: { $max: '$images.finishedAt' },
            images: { $sum: 1 },
            reruns: { $sum: { $cond: [{ $gt: ['$images.attempt', 1] }, 1, 0] } },
          },
        },
      ])
      .toArray();
    const files = await db.collection('images.files').countDocuments({ 'metadata.jobId': { $in: jobIds } });
    const succeeded = await db.collection('jobs').countDocuments({ _id: { $in: jobIds as never[] }, status: 'completed', succeededImages: PER_JOB });
    const seconds = (span.last.getTime() - span.first.getTime()) / 1000;
    say(
      `${n} worker${n > 1 ? 's' : ' '}: ${span.images} images in ${seconds.toFixed(2)} s = ${Math.round(span.images / seconds)} images/s; ` +
        `jobs completed ${succeeded}/${jobIds.length}; generated more than once: ${span.reruns} (stored files ${files} for ${span.images} images)`,
    );
    const perImage = (micros: number) => (micros / 1000 / span.images).toFixed(2);
    say(
      `          CPU per image: worker${n > 1 ? 's' : ''} ${perImage(workerCpu)} ms (generation, queue, storage), ` +
        `${embedded ? 'database + ' : ''}gateway ${perImage(ownCpu.user + ownCpu.system)} ms`,
    );
    await Promise.all(ws.map(stopWorker));
  }
  if (WEBHOOK) say(`webhook deliveries acknowledged: ${webhooksReceived}`);

  await app.close();
  await services.close();
  await connection.dropDatabase();
  await connection.close();
}

function startWorker(uri: string, name: string): Worker {
  // BENCH_WORKER_NODE_ARGS, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, profiles the workers.
  const extra = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...extra, '--import', 'tsx/esm', 'workers/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, MONGODB_URI: uri, LOG_LEVEL: 'info', IMAGE_PROVIDER: 'builtin', NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_URLS: WEBHOOK ? 'true' : 'false' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', resolve));
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('image worker started')) resolve();
      if (out.length > 100_000) out = out.slice(-10_000);
    });
    void exited.then((code) => reject(new Error(`worker ${name} exited (${code}):\n${out}`)));
  });
  ready.catch(() => undefined);
  const w = { proc, ready, exited };
  workers.push(w);
  return w;
}

/** A receiver on 127.0.0.1 that acknowledges every delivery; resolves with its URL. */
async function startReceiver(): Promise<string> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      webhooksReceived++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  server.unref();
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`;
}

async function stopWorker(w: Worker): Promise<void> {
  w.proc.kill('SIGTERM');
  await w.exited;
}


main()
  .catch((err: unknown) => {
    process.stderr.write(`bench failed: ${String((err as Error)?.stack ?? err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const w of workers) if (w.proc.exitCode === null) w.proc.kill('SIGKILL');
    await embedded?.stop();
    process.exit();
  });
