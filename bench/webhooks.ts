/**
 * Webhook latency benchmark (`npm run bench:webhooks`): a gateway in this process, one standalone
 * worker process (builtin provider) on the same database (embedded unless MONGODB_URI), a receiver on
 * 127.0.0.1 registered for job.completed. One single-image job at a time; prints, p50/p99:
 *  - job completed (its completedAt, written by the worker) → webhook received by the receiver;
 *  - POST sent → webhook received.
 * Env: BENCH_SAMPLES (200).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { startEmbeddedMongo, type EmbeddedMongo } from '@credit-gateway/embedded-mongo';
import { loadConfig } from '../src/config.js';
import { connectDatabase } from '../src/data/connection.js';
import { buildApp } from '../src/http/app.js';
import { buildServices } from '../src/services.js';
import { pct, say, sleep } from './report.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);

let embedded: EmbeddedMongo | undefined;
let worker: ChildProcess | undefined;

async function main(): Promise<void> {
  let uri = process.env.MONGODB_URI;
  if (!uri) {
    embedded = await startEmbeddedMongo({ port: 0 });
    uri = embedded.uri;
  }
  const dbUri = new URL(uri);
  dbUri.pathname = `/bench_webhooks_${Date.now()}`;
  const env = { MONGODB_URI: dbUri.toString(), IN_PROCESS_WORKER: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', NODE_ENV: 'production', LOG_LEVEL: 'silent' } as const;
  const config = loadConfig(env);
  const connection = await connectDatabase(dbUri.toString());
  const services = await buildServices(config, { connection, role: 'bench-gateway' });
  const app = await buildApp({ config, services, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

  // The receiver: notes when each job's event arrived.
  const arrived = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const jobId = (JSON.parse(Buffer.concat(chunks).toString()) as { data: { jobId: string } }).data.jobId;
      arrived.set(jobId, at);
      waiting.get(jobId)?.();
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;

  const actor = { actor: 'bench', ip: null, host: 'bench' };
  const account = await services.credits.createAccount('bench', 10_000_000, actor);
  const { key } = await services.keys.create(account.id, 'bench', actor);
  await services.webhooks.create(account.id, { url: receiverUrl, events: ['job.completed'] }, base);

  worker = spawn(process.execPath, ['--import', 'tsx/esm', 'workers/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, LOG_LEVEL: 'info', IMAGE_PROVIDER: 'builtin' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    worker!.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('image worker started')) resolve();
      if (out.length > 100_000) out = out.slice(-10_000);
    });
    worker!.once('exit', (code) => reject(new Error(`worker exited (${code}): ${out}`)));
  });
  await sleep(500);

  say(`webhook bench: ${SAMPLES} single-image jobs one at a time, one worker process, builtin provider, database ${embedded ? 'embedded' : 'MONGODB_URI'}`);
  const fromCompleted: number[] = [];
  const fromPost: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const sent = Date.now();
    const res = await fetch(`${base}/api/playground/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompts: [`webhook sample ${i}`] }),
    });
    if (res.status !== 201) throw new Error(`POST ${res.status}: ${await res.text()}`);
    const { jobId } = (await res.json()) as { jobId: string };
    if (!arrived.has(jobId)) await withTimeout(new Promise<void>((r) => waiting.set(jobId, r)), 30_000, `webhook of job ${jobId}`);
    const job = await services.imageJobs.store.findById(jobId);
    fromCompleted.push(arrived.get(jobId)! - job!.completedAt!.getTime());
    fromPost.push(arrived.get(jobId)! - sent);
  }
  say(`job completed → webhook received: p50 ${pct(fromCompleted, 50)} ms, p99 ${pct(fromCompleted, 99)} ms, max ${Math.max(...fromCompleted)} ms`);
  say(`POST sent     → webhook received: p50 ${pct(fromPost, 50)} ms, p99 ${pct(fromPost, 99)} ms`);
  say(`webhooks received: ${arrived.size} for ${SAMPLES} jobs`);

  worker.kill('SIGTERM');
  await new Promise((r) => worker!.once('exit', r));
  receiver.close();
  await app.close();
  await services.close();
  await connection.dropDatabase();
  await connection.close();
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)))]).finally(() => clearTimeout(timer));
}


main()
  .catch((err: unknown) => {
    process.stderr.write(`bench failed: ${String((err as Error)?.stack ?? err)}\n`);
    process.exitCode = 1;
  })
  .finally(async () => {
    if (worker && worker.exitCode === null) worker.kill('SIGKILL');
    await embedded?.stop();
    process.exit();
  });
