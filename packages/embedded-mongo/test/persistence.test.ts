// Durability of the embedded server's --dbpath mode (this file starts its own servers through the
// `npm run db` entry point, whatever MONGODB_URI says): after kill -9 every acknowledged write is back.
import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { MongoClient } from 'mongodb';
import { CLI, startCliServer, stopProcess } from './helpers/cli-server.js';
import { until } from './helpers/until.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-mongo-'));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

it('loses no acknowledged write when the server is killed with SIGKILL', async () => {
  const first = await startCliServer([`--dbpath=${dir}`], children);
  // Bounds how long the write in flight at the kill retries before it fails (its server is gone for good).
  const client = await MongoClient.connect(first.uri, { serverSelectionTimeoutMS: 5000 });
  const c = client.db('durable').collection('items');
  await c.createIndex({ sku: 1 }, { unique: true });
  const acknowledged: number[] = [];
  for (let i = 0; i < 300; i++) {
    await c.insertOne({ sku: i, qty: 0 });
    acknowledged.push(i);
  }
  await c.updateMany({ sku: { $lt: 100 } }, { $inc: { qty: 5 } });
  await c.deleteMany({ sku: { $gte: 290 } });
  // Keep writing while the kill lands; whatever was acknowledged must survive.
  let stop = false;
  const writer = (async () => {
    for (let i = 300; !stop; i++) {
      try {
        await c.insertOne({ sku: i, qty: 1 });
        acknowledged.push(i);
      } catch {
        return;
      }
    }
  })();
  // Kill once the writer has writes acknowledged (and more in flight), however slow the machine.
  const killAt = acknowledged.length + 20;
  await until(() => acknowledged.length >= killAt, 'writes acknowledged after the first 300');
  await stopProcess(first.child);
  stop = true;
  await writer;
  await client.close(true).catch(() => undefined);

  const second = await startCliServer([`--dbpath=${dir}`], children);
  const again = await MongoClient.connect(second.uri);
  try {
    const items = again.db('durable').collection('items');
    const present = new Set((await items.find({}, { projection: { sku: 1 } }).toArray()).map((d) => d.sku as number));
    const expected = acknowledged.filter((i) => i < 290 || i >= 300);
    expect(expected.length).toBeGreaterThan(290);
    expect(expected.filter((i) => !present.has(i))).toEqual([]);
    expect(present.has(295)).toBe(false);
    expect(await items.countDocuments({ qty: 5 })).toBe(100);
    await expect(items.insertOne({ sku: 1 })).rejects.toMatchObject({ code: 11000 });
    expect((await items.listIndexes().toArray()).map((i) => i.name)).toContain('sku_1');
  } finally {
    await again.close();
    await stopProcess(second.child, 'SIGTERM');
  }
}, 120_000);

it('refuses unknown options and bad ports with exit code 2 and the usage line', () => {
  for (const args of [['--dbPath=/tmp/x'], ['--port=70000'], ['--port=abc'], ['stray']]) {
    const res = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
    expect(res.status, args.join(' ')).toBe(2);
    expect(res.stderr).toContain('usage: npm run db');
  }
}, 120_000);
