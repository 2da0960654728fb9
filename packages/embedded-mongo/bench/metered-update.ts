// Microbenchmark of the embedded server's work for the charge's update (not a test): `npm run
// bench:db:update` at the repository root. Issue 18 compares the REST lookup with "a bare route + one
// guarded findOneAndUpdate"; the lookup's update also counts usage (dotted-path $inc, $min), and
// whatever the database spends on those extra fields counts against the gateway. This drives the
// server's own request path in-process (OP_MSG parse, operation monitor, findAndModify, change log,
// reply encoding) with the two commands the driver sends, byte for byte, and prints µs per command:
// the median of BENCH_ROUNDS (7) rounds of BENCH_OPS (20,000) commands each. Then the same two over
// TCP, the server in its own process (`npm run db`) and 16 driver connections, as `npm run bench`
// sees them: the server's CPU per command (socket and kernel time included), median of BENCH_ROUNDS
// rounds of BENCH_WIRE_OPS (5,000); BENCH_WIRE_OPS=0 skips it. A change stream is open throughout, as
// the gateway's key feed keeps one. BENCH_DBPATH=<dir> journals to that directory as `--dbpath` does;
// BENCH_ONLY=plain or metered runs one of the two (to profile it with --cpu-prof).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BSON, type ObjectId } from 'bson';
import { MongoClient, type CommandStartedEvent } from 'mongodb';
import type { Doc } from '../src/bson-order.js';
import { runCommand, type CommandContext } from '../src/commands.js';
import { Monitor } from '../src/monitor.js';
import { EmbeddedServer } from '../src/server.js';
import { encodeMsg, parseMessage, OP_MSG } from '../src/wire.js';
import { cpuMicros } from './proc-stats.js';

const OPS = Number(process.env.BENCH_OPS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const WIRE_OPS = Number(process.env.BENCH_WIRE_OPS ?? 5_000);
const dbPath = process.env.BENCH_DBPATH;

type Charges = { plain: () => Promise<unknown>; metered: () => Promise<unknown>; close: () => Promise<void> };

/** The gateway's accounts collection on the server at `uri` (mongoose's document shape, its one secondary index), an open change stream, and the two charges. */
async function setUp(uri: string, onCommand?: (e: CommandStartedEvent) => void): Promise<Charges> {
  const client = await MongoClient.connect(uri, { monitorCommands: onCommand !== undefined, maxPoolSize: 16 });
  if (onCommand) client.on('commandStarted', onCommand);
  const db = client.db('bench_update');
  await db.dropDatabase();
  const accounts = db.collection('accounts');
  await accounts.createIndex({ usageOldestDay: 1 }, { sparse: true });
  const now = new Date();
  const { insertedId: id } = await accounts.insertOne({ name: 'bench', credits: 1_000_000_000, ops: [], createdAt: now, updatedAt: now });
  const stream = accounts.watch();
  await stream.tryNext();
  const day = new Date(`${now.toISOString().slice(0, 10)}T00:00:00.000Z`);
  const bucket = `usage.${now.toISOString().slice(0, 10).replace(/-/g, '')}_definitions_0123456789abcdef01234567`;
  return {
    plain: () =>
      accounts.findOneAndUpdate({ _id: id, credits: { $gte: 1 } }, { $inc: { credits: -1 }, $set: { updatedAt: new Date() } }, { returnDocument: 'after', projection: { credits: 1 } }),
    metered: () =>
      accounts.findOneAndUpdate(
        { _id: id as ObjectId, credits: { $gte: 1 } },
        { $inc: { credits: -1, [`${bucket}.calls`]: 1, [`${bucket}.credits`]: 1 }, $set: { updatedAt: new Date() }, $min: { usageOldestDay: day } },
        { returnDocument: 'after', projection: { credits: 1, lowCreditsThreshold: 1, lowCreditsDisarmed: 1 } },
      ),
    close: async () => {
      await stream.close();
      await client.close();
    },
  };
}

const server = new EmbeddedServer({ port: 0, host: '127.0.0.1', dbPath });
const port = await server.listen();
// The commands exactly as the driver sends them (lsid, $db and all), captured once.
const sent: Doc[] = [];
const charges = await setUp(`mongodb://127.0.0.1:${port}/`, (e) => {
  if (e.commandName === 'findAndModify') sent.push(e.command as Doc);
});
await charges.plain();
await charges.metered();
const [plainCmd, meteredCmd] = sent;
await charges.close();

/** One OP_MSG as the driver frames it (kind-0 body section only; the driver sends no sequences here). */
function frame(body: Doc, requestId: number): Buffer {
  const doc = BSON.serialize(body);
  const out = Buffer.alloc(21 + doc.length);
  out.writeInt32LE(out.length, 0);
  out.writeInt32LE(requestId, 4);
  out.writeInt32LE(OP_MSG, 12);
  out[20] = 0;
  Buffer.from(doc.buffer, doc.byteOffset, doc.length).copy(out, 21);
  return out;
}

const monitor = new Monitor();
const connection = monitor.connect('127.0.0.1:1');
const ctx: CommandContext = { db: 'admin', connectionId: connection.id, monitor };

/** What EmbeddedServer.handle does for one request, minus the socket write. */
function serve(message: Buffer): Buffer {
  const req = parseMessage(message);
  const body = req.body;
  ctx.db = body.$db as string;
  const op = monitor.begin(connection, ctx.db, body, true);
  const reply = runCommand(server.engine, body, ctx) as Doc;
  monitor.end(op, reply);
  return encodeMsg(req.requestId, reply);
}

const messages = { plain: frame(plainCmd, 1), metered: frame(meteredCmd, 2) };
for (const [name, m] of Object.entries(messages)) {
  const reply = parseMessage(serve(m)).body;
  if (reply.ok !== 1 || !reply.value) throw new Error(`${name}: unexpected reply ${JSON.stringify(reply)}`);
}

function round(message: Buffer): number {
  const t0 = process.cpuUsage();
  for (let i = 0; i < OPS; i++) serve(message);
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / OPS;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const only = process.env.BENCH_ONLY;
const figures: Record<string, number[]> = only === 'plain' || only === 'metered' ? { [only]: [] } : { plain: [], metered: [] };
for (let w = 0; w < 3; w++) for (const name of Object.keys(figures)) round(messages[name as keyof typeof messages]); // JIT warm-up
for (let r = 0; r < ROUNDS; r++) for (const name of Object.keys(figures)) figures[name].push(round(messages[name as keyof typeof messages]));
const [load1] = os.loadavg();
console.log(`findAndModify on the embedded server, in-process, ${ROUNDS} rounds × ${OPS} commands, ${dbPath ? 'journaled' : 'in memory'}, load average ${load1.toFixed(2)}`);
for (const [name, xs] of Object.entries(figures)) {
  console.log(`${name.padEnd(8)} ${median(xs).toFixed(1).padStart(6)} µs CPU per command (median; rounds ${xs.map((x) => x.toFixed(1)).join(' ')})`);
}
if (figures.plain && figures.metered) console.log(`metered − plain: ${(median(figures.metered) - median(figures.plain)).toFixed(1)} µs`);
await server.close();
if (dbPath) fs.rmSync(dbPath, { recursive: true, force: true });
if (WIRE_OPS > 0) await overTheWire();

async function overTheWire(): Promise<void> {
  const cli = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'cli.ts');
  const child = spawn(process.execPath, ['--import', 'tsx/esm', cli, '--port=0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const uri = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /MONGODB_URI=(\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  const wire = await setUp(uri);
  const concurrent = async (op: () => Promise<unknown>): Promise<number> => {
    const cpu0 = cpuMicros(child.pid);
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next++ < WIRE_OPS) await op();
      }),
    );
    return (cpuMicros(child.pid) - cpu0) / WIRE_OPS;
  };
  const names = Object.keys(figures) as Array<keyof typeof messages>;
  for (const name of names) await concurrent(wire[name]); // warm-up
  const perOp: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) for (const name of names) perOp[name].push(await concurrent(wire[name]));
  console.log(`\nthe same over TCP, server in its own process, 16 connections, ${ROUNDS} rounds × ${WIRE_OPS}, load average ${os.loadavg()[0].toFixed(2)}`);
  for (const [name, xs] of Object.entries(perOp)) {
    console.log(`${name.padEnd(8)} ${median(xs).toFixed(0).padStart(6)} µs server CPU per command (median; rounds ${xs.map((x) => x.toFixed(0)).join(' ')})`);
  }
  if (perOp.plain && perOp.metered) console.log(`metered − plain: ${(median(perOp.metered) - median(perOp.plain)).toFixed(0)} µs`);
  await wire.close();
  child.kill('SIGTERM');
}
