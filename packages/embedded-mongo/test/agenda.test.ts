// Agenda 6 on @agendajs/mongo-backend against the database under test: two worker processes drain a
// shared queue and every job runs exactly once (claims go through findOneAndUpdate's atomicity).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { Agenda } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('agenda');
const worker = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'agenda-worker.ts');
const JOBS = 2000;

function runWorker(name: string): Promise<{ worker: string; processed: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', worker, testDb.uri, testDb.dbName, name, 'record'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`worker ${name} exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').pop()!));
    });
  });
}

it('runs 2,000 jobs through two worker processes exactly once', async () => {
  const producer = new Agenda({ backend: new MongoBackend({ mongo: testDb.db, collection: 'jobs' }) });
  await producer.ready;
  for (let start = 0; start < JOBS; start += 200) {
    await Promise.all(Array.from({ length: 200 }, (_, i) => producer.now('noop', { n: start + i })));
  }
  expect(await testDb.db.collection('jobs').countDocuments()).toBe(JOBS);

  const results = await Promise.all([runWorker('w1'), runWorker('w2')]);
  const processed = results.reduce((s, r) => s + r.processed, 0);
  expect(processed).toBe(JOBS);
  const runs = await testDb.db.collection<{ _id: number; count: number }>('runs').find().toArray();
  expect(runs.length).toBe(JOBS);
  expect(runs.every((r) => r.count === 1)).toBe(true);
  expect(await testDb.db.collection('jobs').countDocuments()).toBe(0);
}, 120_000);
