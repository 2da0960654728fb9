/**
 * Image pipeline benchmark (`npx tsx bench/images.ts`): a gateway in this process, standalone worker
 * processes (`workers/main.ts`, builtin provider) on the same database (embedded unless MONGODB_URI).
 * Prints, by section (BENCH_SECTIONS, default `formats,memory,latency,backlog`):
 *  - formats: the builtin provider's images/s and size in bytes per format and size (one at a time);
 *  - memory: the embedded database's RSS (its own process) after a 2,000-image backlog with
 *    IMAGE_STORE=fs and with IMAGE_STORE=gridfs;
 *  - latency: enqueue-to-first-image-start latency, p50/p99, with an idle worker (POST sent → image claimed);
 *  - backlog: images/s draining a 2,000-image backlog with one and with two workers, and how many
 *    images were generated more than once (must be 0).
 * Env: BENCH_SECTIONS, BENCH_FORMAT_IMAGES (20 per format and size), BENCH_LATENCY_SAMPLES (200),
 * BENCH_BACKLOG (2000), WORKER_CONCURRENCY (worker default),
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
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { cpuMicros, rssMiB } from '../packages/embedded-mongo/bench/proc-stats.js';
import { BuiltinImageProvider, BUILTIN_OFFER } from '../src/providers/images/builtin.js';
import { parseSize } from '../src/domain/jobs/options.js';
import { pct, say, sleep } from './report.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SAMPLES = Number(process.env.BENCH_LATENCY_SAMPLES ?? 200);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 2000);
const PER_JOB = 50;
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? 'formats,memory,latency,backlog').split(',').map((x) => x.trim()));
const FORMAT_IMAGES = Number(process.env.BENCH_FORMAT_IMAGES ?? 20);
/** Production requires a mail relay; the benchmark sends no email, so none is ever reached. */
const NO_MAIL = 'smtp://127.0.0.1:9';
/** Embedded database processes of the memory section, killed however the run ends. */
const databases: ChildProcess[] = [];
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
  if (SECTIONS.has('formats')) await formats();
  if (SECTIONS.has('memory')) for (const store of ['fs', 'gridfs'] as const) await memory(store);
  if (SECTIONS.has('latency') || SECTIONS.has('backlog')) await pipeline();
}

/** The builtin provider alone: what each format and size costs to draw and encode, one image at a time. */
async function formats(): Promise<void> {
  const provider = new BuiltinImageProvider();
  say(`builtin provider, ${FORMAT_IMAGES} images per format and size, one at a time (sharp's own threads):`);
  for (const size of BUILTIN_OFFER.sizes) {
    const cells: string[] = [];
    for (const format of BUILTIN_OFFER.formats) {
      const options = { size: parseSize(size)!, format, seed: 1 };
      await provider.generate('warm-up', options);
      let bytes = 0;
      const started = performance.now();
      for (let i = 0; i < FORMAT_IMAGES; i++) bytes += (await provider.generate(`format bench ${i}`, { ...options, seed: i })).data.length;
      const seconds = (performance.now() - started) / 1000;
      cells.push(`${format} ${(FORMAT_IMAGES / seconds).toFixed(0)}/s ${(bytes / FORMAT_IMAGES / 1024).toFixed(1)} KB`);
    }
    say(`  ${size.padEnd(9)} ${cells.join(' | ')}`);
  }
}

/**
 * The embedded database in its own process (what `npm start` runs when MONGODB_URI is unset), a
 * gateway here and one worker, IMAGE_STORE=`store`: its RSS before and after a backlog is drained.
 */
async function memory(store: 'fs' | 'gridfs'): Promise<void> {
  const db = spawn(process.execPath, ['--import', 'tsx/esm', 'packages/embedded-mongo/src/cli.ts', '--port=0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  databases.push(db);
  const uri = await new Promise<string>((resolve, reject) => {
    let out = '';
    db.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /MONGODB_URI=(\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    db.once('exit', (code) => reject(new Error(`embedded database exited (${code}): ${out}`)));
  });
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-images-'));
  const dbUri = new URL(uri);
  dbUri.pathname = '/bench_memory';
  const env = { IMAGE_STORE: store, IMAGE_DIR: dir };
  const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'silent', SMTP_URL: NO_MAIL, MONGODB_URI: dbUri.toString(), IN_PROCESS_WORKER: 'false', ...env });
  const connection = await connectDatabase(dbUri.toString());
  const services = await buildServices(config, { connection, role: 'bench-gateway' });
  const actor = { actor: 'bench', ip: null, host: 'bench' };
  const account = await services.credits.createAccount('bench', 10_000_000, actor);
  const owner = { accountId: account.id, keyId: null, userId: 'bench' } as const;
  const before = rssMiB(db.pid);
  const w = startWorker(dbUri.toString(), `memory-${store}`, env);
  await w.ready;
  const jobIds: string[] = [];
  for (let j = 0; j < BACKLOG / PER_JOB; j++) {
    jobIds.push((await services.jobs.create(owner, Array.from({ length: PER_JOB }, (_, i) => `memory ${store} job ${j} image ${i}`))).jobId);
  }
  const started = Date.now();
  for (;;) {
    const open = await connection.db!.collection('jobs').countDocuments({ status: { $in: ['queued', 'running'] } });
    if (open === 0) break;
    if (Date.now() - started > 600_000) throw new Error(`${open} jobs still open`);
    await sleep(200);
  }
  const seconds = (Date.now() - started) / 1000;
  const files = await connection.db!.collection('images.files').countDocuments();
  await stopWorker(w);
  await services.close();
  await connection.close();
  const after = rssMiB(db.pid);
  say(
    `IMAGE_STORE=${store.padEnd(6)}: embedded database RSS ${before} MiB before, ${after} MiB after a ${BACKLOG}-image backlog ` +
      `(+${after - before} MiB; drained in ${seconds.toFixed(1)} s; GridFS files ${files})`,
  );
  db.kill('SIGTERM');
  await new Promise((r) => db.once('exit', r));
  await rm(dir, { recursive: true, force: true });
}

/** Latency and backlog drains, as before image options existed (default options, GridFS). */
async function pipeline(): Promise<void> {
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
    SMTP_URL: NO_MAIL,
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
  if (SECTIONS.has('latency')) {
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
  }

  // 2. Backlog drains with one and with two workers.
  for (const n of SECTIONS.has('backlog') ? [1, 2] : []) {
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

function startWorker(uri: string, name: string, env: Record<string, string> = {}): Worker {
  // BENCH_WORKER_NODE_ARGS, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`, profiles the workers.
  const extra = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...extra, '--import', 'tsx/esm', 'workers/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, MONGODB_URI: uri, LOG_LEVEL: 'info', IMAGE_PROVIDER: 'builtin', NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_URLS: WEBHOOK ? 'true' : 'false', ...env },
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
    for (const db of databases) if (db.exitCode === null) db.kill('SIGKILL');
    await embedded?.stop();
    process.exit();
  });
