// Benchmark of the embedded MongoDB server (not a test): `npm run bench:db` at the repository root.
// The server runs in its own process so its CPU time and memory can be read from /proc; prints guarded
// findOneAndUpdate by _id and insertOne at 10 and at 100,000 documents, Agenda drain rates, the server's
// memory while 100,000 change events of 100 KB documents pass an open change stream, and the --dbpath
// restart after SIGKILL with a 1,000,000-record journal and the compaction that follows. BENCH_OPS,
// BENCH_AGENDA_JOBS, BENCH_CHANGE_EVENTS, BENCH_CHANGE_DOC_BYTES and BENCH_JOURNAL_RECORDS scale it down.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient, MongoServerError, ObjectId, type Collection } from 'mongodb';
import { cpuMicros, peakRssMiB } from './proc-stats.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'src', 'cli.ts');
const worker = path.join(root, 'test', 'fixtures', 'agenda-worker.ts');

const OPS = Number(process.env.BENCH_OPS ?? 10_000);
const CONCURRENCY = 16;
const AGENDA_JOBS = Number(process.env.BENCH_AGENDA_JOBS ?? 10_000);
const CHANGE_EVENTS = Number(process.env.BENCH_CHANGE_EVENTS ?? 100_000);
const CHANGE_DOC_BYTES = Number(process.env.BENCH_CHANGE_DOC_BYTES ?? 100_000);
const JOURNAL_RECORDS = Number(process.env.BENCH_JOURNAL_RECORDS ?? 1_000_000);

function startServer(args: string[] = []): Promise<{ child: ChildProcess; uri: string }> {
  return new Promise((resolve, reject) => {
    // node --import tsx keeps the server in one process whose CPU time /proc reports.
    const child = spawn(process.execPath, ['--import', 'tsx/esm', cli, '--port=0', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /MONGODB_URI=(\S+)/.exec(out);
      if (m) resolve({ child, uri: m[1] });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
}

async function runConcurrent(total: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < total) await op(next++);
    }),
  );
}

type Figure = { opsPerSec: number; cpuMicrosPerOp: number };

/** Median of three timed rounds (the machine is shared, single rounds are noisy). */
async function measure(pid: number, total: number, op: (i: number) => Promise<unknown>): Promise<Figure> {
  await runConcurrent(Math.min(2000, total), op); // warm-up
  const rounds: Figure[] = [];
  for (let r = 0; r < 3; r++) {
    const cpu0 = cpuMicros(pid);
    const t0 = performance.now();
    await runConcurrent(total, op);
    const ms = performance.now() - t0;
    const cpu = cpuMicros(pid) - cpu0;
    rounds.push({ opsPerSec: Math.round((total / ms) * 1000), cpuMicrosPerOp: Math.round(cpu / total) });
  }
  const median = <T>(xs: T[], key: (x: T) => number): number => xs.map(key).sort((a, b) => a - b)[1];
  return { opsPerSec: median(rounds, (r) => r.opsPerSec), cpuMicrosPerOp: median(rounds, (r) => r.cpuMicrosPerOp) };
}

async function fill(c: Collection, n: number): Promise<void> {
  const batch = 1000;
  for (let i = 0; i < n; i += batch) {
    await c.insertMany(Array.from({ length: Math.min(batch, n - i) }, (_, j) => ({ credits: 1_000_000_000, n: i + j, owner: `acct-${i + j}` })));
  }
}

async function crudFigures(uri: string, pid: number, size: number): Promise<{ fau: Figure; insert: Figure }> {
  const client = await MongoClient.connect(uri, { maxPoolSize: CONCURRENCY });
  const db = client.db(`bench_${size}`);
  await db.dropDatabase();
  const balances = db.collection('balances');
  await fill(balances, size);
  const ids = (await balances.find({}, { projection: { _id: 1 } }).limit(10).toArray()).map((d) => d._id as ObjectId);
  const fau = await measure(pid, OPS, (i) =>
    balances.findOneAndUpdate({ _id: ids[i % ids.length], credits: { $gte: 1 } }, { $inc: { credits: -1 } }, { returnDocument: 'after' }),
  );
  const inserts = db.collection('inserts');
  await fill(inserts, size);
  const insert = await measure(pid, OPS, (i) => inserts.insertOne({ credits: 5, n: size + i, owner: `new-${i}` }));
  await db.dropDatabase();
  await client.close();
  return { fau, insert };
}

function runWorker(uri: string, dbName: string, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx/esm', worker, uri, dbName, name, 'noop'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!).processed) : reject(new Error(`worker exited ${code}`))));
  });
}

async function agendaFigure(uri: string, workers: number): Promise<{ jobsPerSec: number; processed: number }> {
  const client = await MongoClient.connect(uri);
  const dbName = `bench_agenda_${workers}`;
  const db = client.db(dbName);
  await db.dropDatabase();
  const jobs = db.collection('jobs');
  // The same documents Agenda's now() writes, inserted in bulk so only the drain is timed.
  for (let i = 0; i < AGENDA_JOBS; i += 1000) {
    const now = new Date();
    await jobs.insertMany(
      Array.from({ length: Math.min(1000, AGENDA_JOBS - i) }, (_, j) => ({
        name: 'noop',
        data: { n: i + j },
        type: 'normal',
        priority: 0,
        nextRunAt: now,
        lastModifiedBy: null,
      })),
    );
  }
  const t0 = performance.now();
  const counts = await Promise.all(Array.from({ length: workers }, (_, i) => runWorker(uri, dbName, `w${i}`)));
  const ms = performance.now() - t0;
  const processed = counts.reduce((a, b) => a + b, 0);
  await db.dropDatabase();
  await client.close();
  return { jobsPerSec: Math.round((processed / ms) * 1000), processed };
}

type MemoryStatus = { rssMiB: number; heapMiB: number; changelogMiB: number; changelogEvents: number; boundMiB: number };

async function memoryStatus(client: MongoClient): Promise<MemoryStatus> {
  const s = await client.db('admin').command({ serverStatus: 1 });
  const MiB = 1024 ** 2;
  return {
    rssMiB: s.mem.resident,
    heapMiB: Math.round(s.embedded.heap.usedBytes / MiB),
    changelogMiB: Math.round(s.embedded.changelog.bytes / MiB),
    changelogEvents: s.embedded.changelog.events,
    boundMiB: Math.round(s.embedded.changelog.boundBytes / MiB),
  };
}

/**
 * The server's memory while CHANGE_EVENTS change events of CHANGE_DOC_BYTES documents pass a change
 * stream that is open but never read (the worst case: every event is one it has not read). The change
 * log is bounded by bytes, so RSS and heap level off near the bound instead of growing with the events;
 * a sample every tenth of the run. The events replace ten documents over and over, so the collection
 * itself stays small.
 */
async function changelogMemory(): Promise<void> {
  const { child, uri } = await startServer();
  try {
    const client = await MongoClient.connect(uri, { maxPoolSize: CONCURRENCY });
    const docs = client.db('bench_changelog').collection<{ _id: number; n: number; pad: string }>('docs');
    await docs.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i, n: 0, pad: '' })));
    const stream = docs.watch([], { maxAwaitTimeMS: 10 });
    await stream.tryNext(); // opens the stream on the server; it is not read again until the end
    const before = await memoryStatus(client);
    console.log(
      `change log: bound ${before.boundMiB} MiB; server before the events: RSS ${before.rssMiB} MiB, heap ${before.heapMiB} MiB`,
    );
    const pad = 'x'.repeat(CHANGE_DOC_BYTES);
    const step = Math.max(1, Math.round(CHANGE_EVENTS / 10));
    const t0 = performance.now();
    for (let done = 0; done < CHANGE_EVENTS; done += step) {
      const n = Math.min(step, CHANGE_EVENTS - done);
      await runConcurrent(n, (i) => docs.replaceOne({ _id: (done + i) % 10 }, { n: done + i, pad }));
      const m = await memoryStatus(client);
      console.log(
        `  after ${done + n} events of ${Math.round(CHANGE_DOC_BYTES / 1000)} KB: RSS ${m.rssMiB} MiB, heap ${m.heapMiB} MiB, ` +
          `change log ${m.changelogMiB} MiB in ${m.changelogEvents} events`,
      );
    }
    const seconds = (performance.now() - t0) / 1000;
    const lost = await stream.next().then(
      () => 'returned an event (NOT expected)',
      (e: unknown) => (e instanceof MongoServerError ? `failed with ${e.codeName} (${e.code})` : `failed: ${String(e)}`),
    );
    console.log(
      `  ${Math.round(CHANGE_EVENTS / seconds)} events/s; peak RSS ${peakRssMiB(child.pid)} MiB; the unread stream's next getMore ${lost}`,
    );
    await client.close();
  } finally {
    child.kill('SIGTERM');
  }
}

async function kill9(child: ChildProcess): Promise<void> {
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

/** Starts a server; `ms` until it accepts connections, and the CPU it used for that (load-independent). */
async function timedStart(args: string[]): Promise<{ child: ChildProcess; uri: string; ms: number; cpuMs: number }> {
  const t0 = performance.now();
  const started = await startServer(args);
  return { ...started, ms: Math.round(performance.now() - t0), cpuMs: Math.round(cpuMicros(started.child.pid) / 1000) };
}

type JournalStatus = { bytes: number; snapshotBytes: number; compacting: boolean; compactions: number; lastCompactionMs: number; lastCompactionLongestPauseMs: number };

async function journalStatus(client: MongoClient): Promise<JournalStatus> {
  return (await client.db('admin').command({ serverStatus: 1 })).journal as JournalStatus;
}

/**
 * Fills a --dbpath server with JOURNAL_RECORDS small documents (no compaction meanwhile, so the journal
 * holds them all), kills it with SIGKILL, and times the restart (spawn to MONGODB_URI). The restarted
 * server's bound is 1 byte, so it compacts at once; its pings show how long the event loop is held.
 */
async function restartFigures(): Promise<void> {
  const dbpath = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-journal-'));
  try {
    const empty = await timedStart([`--dbpath=${path.join(dbpath, 'empty')}`]);
    await kill9(empty.child);

    const first = await startServer([`--dbpath=${dbpath}`, `--journal-compact-bytes=${1024 ** 4}`]);
    const client = await MongoClient.connect(first.uri);
    const docs = client.db('bench_journal').collection('docs');
    const batch = 5000;
    for (let i = 0; i < JOURNAL_RECORDS; i += batch) {
      await docs.insertMany(Array.from({ length: Math.min(batch, JOURNAL_RECORDS - i) }, (_, j) => ({ n: i + j, owner: `acct-${(i + j) % 1000}` })));
    }
    const journalMiB = ((await journalStatus(client)).bytes / 1024 ** 2).toFixed(0);
    await kill9(first.child);
    await client.close(true).catch(() => undefined);

    const restarted = await timedStart([`--dbpath=${dbpath}`, '--journal-compact-bytes=1']);
    const again = await MongoClient.connect(restarted.uri);
    const count = await again.db('bench_journal').collection('docs').countDocuments();
    console.log(
      `restart after SIGKILL, ${JOURNAL_RECORDS} journal records (${journalMiB} MiB): ${restarted.ms} ms to accept connections, ` +
        `${restarted.cpuMs} ms server CPU (empty --dbpath: ${empty.ms} ms, ${empty.cpuMs} ms CPU), ${count} documents back, peak RSS ${peakRssMiB(restarted.child.pid!)} MiB`,
    );
    let longestPing = 0;
    let status = await journalStatus(again);
    while (status.compactions === 0) {
      const t0 = performance.now();
      await again.db('admin').command({ ping: 1 });
      longestPing = Math.max(longestPing, performance.now() - t0);
      status = await journalStatus(again);
    }
    const files = fs.readdirSync(dbpath).filter((f) => f.endsWith('.bson'));
    const sizes = files.map((f) => `${f} ${(fs.statSync(path.join(dbpath, f)).size / 1024 ** 2).toFixed(1)} MiB`).join(', ');
    console.log(
      `compaction (snapshot + truncate) of ${count} documents: ${Math.round(status.lastCompactionMs)} ms, event loop held at most ` +
        `${Math.round(status.lastCompactionLongestPauseMs)} ms at a time (longest ping meanwhile ${Math.round(longestPing)} ms); files after: ${sizes}`,
    );
    await kill9(restarted.child);
    await again.close(true).catch(() => undefined);

    const fromSnapshot = await timedStart([`--dbpath=${dbpath}`]);
    console.log(`restart after SIGKILL from that snapshot: ${fromSnapshot.ms} ms to accept connections, ${fromSnapshot.cpuMs} ms server CPU`);
    await kill9(fromSnapshot.child);
  } finally {
    fs.rmSync(dbpath, { recursive: true, force: true });
  }
}

const { child, uri } = await startServer();
try {
  console.log(`embedded-mongo benchmark on ${os.cpus().length} CPU(s), load ${os.loadavg()[0].toFixed(1)}; median of 3 x ${OPS} ops, concurrency ${CONCURRENCY}`);
  for (const size of [10, 100_000]) {
    const { fau, insert } = await crudFigures(uri, child.pid!, size);
    console.log(`guarded findOneAndUpdate by _id @ ${size} docs: ${fau.opsPerSec} ops/s, ${fau.cpuMicrosPerOp} µs server CPU/op`);
    console.log(`insertOne @ ${size} docs: ${insert.opsPerSec} ops/s, ${insert.cpuMicrosPerOp} µs server CPU/op`);
  }
  for (const workers of [1, 2]) {
    const { jobsPerSec, processed } = await agendaFigure(uri, workers);
    const once = processed === AGENDA_JOBS ? 'exactly once' : `NOT exactly once: ${processed} runs`;
    console.log(`Agenda drain of ${AGENDA_JOBS} no-op jobs with ${workers} worker(s): ${jobsPerSec} jobs/s (${once}, includes worker start-up)`);
  }
} finally {
  child.kill('SIGTERM');
}
if (CHANGE_EVENTS > 0) await changelogMemory();
if (JOURNAL_RECORDS > 0) await restartFigures();
